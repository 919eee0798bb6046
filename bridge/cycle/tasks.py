"""The cycle's task steps: labelling task titles, and the tasks a slot's observation holds.

Task titles are labelled like event titles (a "Gym" task is EXERCISE): same classifier,
same layers, so a correction of "Gym" applies to both. A task is labelled again when its
content or the classifier changed; deleted tasks are left alone.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlmodel import col

from bridge.config import Settings
from bridge.store import Store, rows_changed
from bridge.store.models import Task

TASKS_VERSION_KEY = "classifier.tasks_version"


def classify_tasks(store: Store, settings: Settings) -> int:
    """Label every task that is new or changed since it was last labelled."""
    from bridge.cycle.classify import build_classifier, save_llm_state
    from mappings.classifier import EventInfo, calendar_kind

    with store.session() as session:
        if session.execute(select(col(Task.id)).limit(1)).first() is None:
            return 0  # no task source: not even the classifier is built
    classifier = build_classifier(settings, store)
    version = classifier.version
    stmt = select(Task).where(col(Task.deleted).is_(False))
    if store.get_meta(TASKS_VERSION_KEY) == version:
        stmt = stmt.where(col(Task.classified_hash) != col(Task.content_hash))
    with store.session() as session:
        rows = session.execute(stmt).scalars().all()
    results = classifier.classify_many(
        [
            EventInfo(
                title=task.title,
                all_day=task.due_all_day,
                # Opaque (the default): a to-do is work to do; "free" time would make the
                # context layer call it no action at all.
                start_hour=None
                if task.due_utc is None or task.due_all_day
                else task.due_utc.astimezone(settings.tz).hour,
                calendar_kind=calendar_kind(task.list_id),
            )
            for task in rows
        ]
    )
    relabelled = 0
    with store.transaction() as session:
        for task, result in zip(rows, results, strict=True):
            new = (result.action, result.confidence, task.content_hash)
            if (task.action, task.action_confidence, task.classified_hash) == new:
                continue
            relabelled += rows_changed(
                session.execute(
                    update(Task)
                    .where(Task.id == task.id, Task.content_hash == task.content_hash)
                    .values(
                        action=result.action,
                        action_confidence=result.confidence,
                        classified_hash=task.content_hash,
                    )
                )
            )
        store.set_meta(session, TASKS_VERSION_KEY, version)
    save_llm_state(store, settings, classifier.llm)  # type: ignore[arg-type]  # its budget
    return relabelled


MAX_DUE_IN_OBSERVATION = 10


def task_observation(store: Store, lo: datetime, hi: datetime) -> dict[str, Any]:
    """What a slot [lo, hi) holds of the person's open tasks: the ones with a due time in
    it, and how many are overdue at its start. Empty without a task source, so the
    observations of everyone else stay exactly as they were."""
    open_ = (col(Task.status) == "open") & col(Task.deleted).is_(False)
    with store.session() as session:
        if session.execute(select(col(Task.id)).limit(1)).first() is None:
            return {}
        due = session.execute(
            select(col(Task.title), col(Task.action), col(Task.due_utc))
            .where(
                open_,
                col(Task.due_utc) >= lo,
                col(Task.due_utc) < hi,
                col(Task.due_all_day).is_(False),
            )
            .order_by(col(Task.due_utc), col(Task.id))
            .limit(MAX_DUE_IN_OBSERVATION)
        ).all()
        overdue = session.execute(
            select(func.count(col(Task.id))).where(open_, col(Task.due_utc) < lo)
        ).scalar_one()
    return {
        "tasks_due": [
            {"title": title, "action": action, "due": when.isoformat()}
            for title, action, when in due
        ],
        "tasks_overdue": int(overdue),
    }
