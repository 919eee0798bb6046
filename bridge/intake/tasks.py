"""Storing tasks with their history: the current row, plus one change row per transition.

A task's row is upserted by its natural key (source, list, uid). Before that, the stored
state is compared with the new one and each difference becomes a `task_history` row
(created, due, completed, uncompleted, deleted, restored) keyed by (task, kind, time), so
importing the same data again adds nothing and the completions of any past day stay
countable after a task is reopened or deleted. Runs inside the caller's transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select, tuple_, update
from sqlmodel import Session

from bridge.store import upsert
from bridge.store.db import person_of
from bridge.store.models import Task, TaskChange
from connectors.base import TASK_HASHED_FIELDS, TaskScope

TASK_KEY = ("source", "list_id", "uid")
TASK_UPDATE = (*TASK_HASHED_FIELDS, "content_hash")
# Bound parameters per IN query: SQLite's limit is 32766 (999 in old builds), 2 per key.
_KEYS_PER_QUERY = 400


def _stored(session: Session, source: str, keys: list[tuple[str, str]]) -> dict[Any, Any]:
    """(list_id, uid) -> the stored row's id, status, due, completed and deleted."""
    t = Task.__table__  # type: ignore[attr-defined]
    out: dict[Any, Any] = {}
    for i in range(0, len(keys), _KEYS_PER_QUERY):
        chunk = keys[i : i + _KEYS_PER_QUERY]
        rows = session.execute(
            select(
                t.c.list_id,
                t.c.uid,
                t.c.id,
                t.c.status,
                t.c.due_utc,
                t.c.completed_utc,
                t.c.deleted,
            ).where(
                t.c.person == person_of(session),
                t.c.source == source,
                tuple_(t.c.list_id, t.c.uid).in_(chunk),
            )
        ).all()
        out.update({(r[0], r[1]): r[2:] for r in rows})
    return out


def changes(old: Any, row: dict[str, Any], now: datetime) -> list[tuple[str, datetime, Any]]:
    """The history rows (kind, at, due) that take a task from `old` (None: new) to `row`."""
    out: list[tuple[str, datetime, Any]] = []
    status, due, completed, deleted = (
        row["status"],
        row["due_utc"],
        row["completed_utc"],
        row["deleted"],
    )
    if old is None:
        out.append(("created", row["created_utc"] or now, None))
        was_status, was_due, was_completed, was_deleted = "open", None, None, False
    else:
        _, was_status, was_due, was_completed, was_deleted = old
    if due is not None and due != was_due:
        out.append(("due", now, due))
    done, was_done = status == "done", was_status == "done"
    if done and (not was_done or (completed is not None and completed != was_completed)):
        out.append(("completed", completed or now, None))
    elif was_done and not done:
        out.append(("uncompleted", now, None))
    gone, was_gone = deleted or status == "cancelled", was_deleted or was_status == "cancelled"
    if gone and not was_gone:
        out.append(("deleted", now, None))
    elif was_gone and not gone:
        out.append(("restored", now, None))
    return out


def write_tasks(session: Session, source: str, rows: list[dict[str, Any]], now: datetime) -> int:
    """Upsert task rows and append their changes; how many tasks were new or changed."""
    if not rows:
        return 0
    by_key = {(r["list_id"], r["uid"]): r for r in rows}  # a repeated uid: the last wins
    old = _stored(session, source, list(by_key))
    pending = {k: changes(old.get(k), r, now) for k, r in by_key.items()}
    changed = upsert(
        session,
        Task,
        list(by_key.values()),
        keys=TASK_KEY,
        update=TASK_UPDATE,
        touch=("updated_at",),
    )
    new_keys = [k for k in by_key if k not in old]
    ids = {k: v[0] for k, v in old.items()}
    ids.update({k: v[0] for k, v in _stored(session, source, new_keys).items()})
    history = [
        {"task_id": ids[k], "kind": kind, "at_utc": at, "due_utc": due, "recorded_at": now}
        for k, found in pending.items()
        for kind, at, due in found
    ]
    upsert(session, TaskChange, history, keys=("task_id", "kind", "at_utc"))
    return changed


def delete_missing(
    session: Session, source: str, scope: TaskScope, seen: set[str], now: datetime
) -> int:
    """Mark the list's stored tasks that the source no longer has as deleted."""
    t = Task.__table__  # type: ignore[attr-defined]
    keep = seen | scope.keep
    rows = session.execute(
        select(t.c.id, t.c.uid).where(
            t.c.person == person_of(session),
            t.c.source == source,
            t.c.list_id == scope.list_id,
            t.c.deleted.is_(False),
        )
    ).all()
    gone = [task_id for task_id, uid in rows if uid not in keep]
    for i in range(0, len(gone), _KEYS_PER_QUERY * 2):
        chunk = gone[i : i + _KEYS_PER_QUERY * 2]
        session.connection().execute(
            update(t)
            .where(t.c.person == person_of(session), t.c.id.in_(chunk))
            .values(deleted=True, updated_at=now)
        )
        upsert(
            session,
            TaskChange,
            [
                {
                    "task_id": i,
                    "kind": "deleted",
                    "at_utc": now,
                    "due_utc": None,
                    "recorded_at": now,
                }
                for i in chunk
            ],
            keys=("task_id", "kind", "at_utc"),
        )
    return len(gone)
