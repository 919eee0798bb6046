"""Corrections: the person's own labels for event titles (from the CLI and the web page).

A correction wins over every classifier layer from the next classification on, and the
next retrain learns from it. Labelling an event on the page stores a correction for its
title and relabels the event at once, so the page shows the answer without waiting for a
cycle.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlmodel import col

from bridge.errors import BridgeError, InputError
from bridge.store import Store, rows_changed, upsert
from bridge.store.db import utcnow
from bridge.store.models import CalendarEvent, ClassifierCorrection
from mappings.actions import ACTIONS, NOT_AN_ACTION
from mappings.classifier_overrides import Correction, Overrides, group_key, title_pattern


def add_correction(
    store: Store, title: str, action: str, *, channel: str = "cli", now: datetime | None = None
) -> Correction:
    """Store "events titled like this are ACTION"; it wins from the next classification on."""
    action = action.strip().upper()
    if action not in LABELS:
        raise InputError(f"unknown action {action!r}; use one of {', '.join(sorted(LABELS))}")
    pattern = title_pattern(title)
    if not pattern.replace("*", "").strip():
        raise InputError("a correction needs a title with at least one letter or number")
    now = now or utcnow()
    row = {
        "pattern": pattern,
        "title": title.strip(),
        "action": action,
        "channel": channel,
        "created_at": now,
        "updated_at": now,
    }
    with store.transaction() as session:
        upsert(
            session,
            ClassifierCorrection,
            [row],
            keys=("pattern",),
            update=("action", "title", "channel"),
            touch=("updated_at",),
        )
    return Correction(pattern, action, title.strip())


def relabel_answered(store: Store, fix: Correction, *, but: int | None = None) -> int:
    """Label every stored event the correction answers (its title, the title's group, past
    and future) at once, as the next cycle would, but the event `but` (labelled by hand
    itself); returns how many rows changed."""
    over = Overrides([fix])
    with store.session() as session:
        rows = session.execute(select(col(CalendarEvent.id), col(CalendarEvent.title))).all()
    ids = [i for i, title in rows if i != but and over.match(title) is not None]
    if not ids:
        return 0
    changed = 0
    with store.transaction() as session:
        for start in range(0, len(ids), 500):  # bound the IN list
            changed += rows_changed(
                session.execute(
                    update(CalendarEvent)
                    .where(col(CalendarEvent.id).in_(ids[start : start + 500]))
                    .values(action=fix.action, action_confidence=1.0, action_layer="override")
                )
            )
    return changed


def remove_correction(store: Store, title: str) -> bool:
    """Forget the correction stored for titles like this one (or for its group: forgetting
    "Trening 18:00" forgets the answer given for "Trening"); False if there was none."""
    pattern = title_pattern(title)
    key = group_key(title)
    with store.session() as session:
        rows = session.execute(
            select(
                col(ClassifierCorrection.id),
                col(ClassifierCorrection.pattern),
                col(ClassifierCorrection.title),
            )
        ).all()
    ids = [
        i
        for i, stored, corrected in rows
        if stored == pattern or ("*" not in stored and key and group_key(corrected) == key)
    ]
    if not ids:
        return False
    with store.transaction() as session:
        gone = session.execute(
            delete(ClassifierCorrection).where(col(ClassifierCorrection.id).in_(ids))
        )
        return bool(rows_changed(gone))


def corrections(store: Store) -> list[ClassifierCorrection]:
    """Every stored correction, oldest change first (so later ones win)."""
    with store.session() as session:
        stmt = select(ClassifierCorrection).order_by(
            col(ClassifierCorrection.updated_at), col(ClassifierCorrection.id)
        )
        return list(session.execute(stmt).scalars())


LABELS: tuple[str, ...] = (*ACTIONS, NOT_AN_ACTION)


USER_LAYER = "user"


class UnknownEvent(BridgeError):
    """No calendar event has that id."""


def correct_event_label(store: Store, event_id: int, action: str) -> dict[str, Any]:
    """Label an event by hand: store the correction, then relabel the row; returns the label."""
    from bridge.learning.corrections import add_correction

    if action not in LABELS:
        raise InputError(f"action {action!r}: use one of {', '.join(LABELS)}")
    with store.session() as session:
        ev = session.get(CalendarEvent, event_id)
        if ev is None:
            raise UnknownEvent(f"no calendar event with id {event_id}")
        title = ev.title
    # Two short transactions, not one: the correction is the durable part and is
    # idempotent, so a failure between them is mended by the next cycle's relabelling.
    fix = add_correction(store, title, action, channel="web")
    relabel_answered(store, fix, but=event_id)  # the whole group, as the CLI does
    with store.transaction() as session:
        ev = session.get(CalendarEvent, event_id)
        if ev is None:  # deleted by a pull between the two transactions
            raise UnknownEvent(f"no calendar event with id {event_id}")
        changed = (ev.action, ev.action_layer) != (action, USER_LAYER)
        if changed:
            # updated_at stays: a relabel is not a calendar change (implicit feedback reads it)
            ev.action, ev.action_confidence, ev.action_layer = action, 1.0, USER_LAYER
        return {"id": event_id, "action": action, "layer": USER_LAYER, "changed": changed}
