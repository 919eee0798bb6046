"""Answers the person gives without tapping, read from their calendar each cycle.

For an unanswered recommendation the "window" is its slot plus the next one:
- an event of the recommended action that appears in the window after the recommendation
  was made (created there, or moved in) -> accepted (channel "calendar");
- an event of that action that sat in the window and was moved out of it -> rescheduled;
- no answer by the end of its slot -> expired (channel "timeout"), which the history
  keeps apart from an explicit Ignore.
What sat in the window is remembered in `implicit_watch`, refreshed every cycle.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import delete, select
from sqlmodel import Session, col

from bridge.config import Settings
from bridge.learning.feedback import record_feedback
from bridge.store import Store, upsert
from bridge.store.db import to_utc, utcnow
from bridge.store.models import CalendarEvent, Feedback, ImplicitWatch, Recommendation
from mappings.slots import SlotKey, slot_bounds

log = logging.getLogger("rhythm_bridge.implicit")


@dataclass
class ImplicitReport:
    accepted: list[int] = field(default_factory=list)
    rescheduled: list[int] = field(default_factory=list)
    expired: list[int] = field(default_factory=list)


def _window(settings: Settings, rec: Recommendation) -> tuple[datetime, datetime, datetime]:
    """(window start, end of the recommended slot, window end)."""
    key = SlotKey(rec.local_date, rec.slot)
    start, slot_end = slot_bounds(key, settings.tz, settings.boundaries)
    _, window_end = slot_bounds(key.next(), settings.tz, settings.boundaries)
    return to_utc(start), to_utc(slot_end), to_utc(window_end)


def _identity(ev: CalendarEvent) -> tuple[str, str, str]:
    return (ev.source, ev.calendar_id, ev.uid)


def _verdict(
    session: Session, settings: Settings, rec: Recommendation, now: datetime
) -> tuple[str | None, dict[int, datetime]]:
    """The implicit answer for one open recommendation (or None), and what is in its window."""
    lo, slot_end, hi = _window(settings, rec)
    matching = (
        session.execute(
            select(CalendarEvent).where(
                col(CalendarEvent.action) == rec.action,
                col(CalendarEvent.status) != "cancelled",
                col(CalendarEvent.all_day).is_(False),
                col(CalendarEvent.start_utc) < hi,
                col(CalendarEvent.end_utc) > lo,
            )
        )
        .scalars()
        .all()
    )
    watched = {
        w.event_id: w.seen_at
        for w in session.execute(
            select(ImplicitWatch).where(col(ImplicitWatch.recommendation_id) == rec.id)
        ).scalars()
    }
    # An event is known by (source, calendar, uid): some sources store a moved event as a
    # new row and cancel the old one, so the row id alone would lose track of it.
    seen: dict[tuple[str, str, str], datetime] = {}
    if watched:
        for ev in session.execute(
            select(CalendarEvent).where(col(CalendarEvent.id).in_(list(watched)))
        ).scalars():
            seen[_identity(ev)] = watched[ev.id]
    inside = {ev.id: ev for ev in matching}
    inside_ids = {_identity(ev) for ev in matching}
    if any(
        _identity(ev) not in seen and to_utc(ev.updated_at) > to_utc(rec.created_at)
        for ev in matching
    ):
        return "accepted", {}
    for identity, seen_at in seen.items():
        if identity in inside_ids:
            continue
        moved = session.execute(
            select(col(CalendarEvent.id)).where(
                col(CalendarEvent.source) == identity[0],
                col(CalendarEvent.calendar_id) == identity[1],
                col(CalendarEvent.uid) == identity[2],
                col(CalendarEvent.status) != "cancelled",
                col(CalendarEvent.action) == rec.action,
                col(CalendarEvent.updated_at) > seen_at,
            )
        ).first()
        if moved:
            return "rescheduled", {}
    if now >= slot_end:
        return "expired", {}
    return None, {eid: ev.start_utc for eid, ev in inside.items()}


def detect(store: Store, settings: Settings, now: datetime) -> ImplicitReport:
    """Record calendar-driven answers and expiries for every unanswered recommendation."""
    now = to_utc(now)
    report = ImplicitReport()
    with store.session() as session:
        open_recs = (
            session.execute(
                select(Recommendation)
                .outerjoin(Feedback, col(Feedback.recommendation_id) == col(Recommendation.id))
                .where(col(Feedback.id).is_(None))
                .order_by(col(Recommendation.local_date), col(Recommendation.slot))
            )
            .scalars()
            .all()
        )
        verdicts = [(rec, *_verdict(session, settings, rec, now)) for rec in open_recs]
    stamp = utcnow()
    for rec, verdict, inside in verdicts:
        assert rec.id is not None
        if verdict is None:
            with store.transaction() as session:
                session.execute(
                    delete(ImplicitWatch).where(
                        ImplicitWatch.recommendation_id == rec.id,
                        col(ImplicitWatch.event_id).not_in(list(inside)),
                    )
                )
                upsert(
                    session,
                    ImplicitWatch,
                    [
                        {
                            "recommendation_id": rec.id,
                            "event_id": eid,
                            "start_utc": start,
                            "seen_at": stamp,
                        }
                        for eid, start in inside.items()
                    ],
                    keys=("recommendation_id", "event_id"),
                    update=("start_utc",),
                    touch=("seen_at",),
                )
            continue
        channel = "timeout" if verdict == "expired" else "calendar"
        _, created = record_feedback(store, rec.id, verdict, channel)
        if created:
            getattr(report, verdict).append(rec.id)
            log.info("recommendation #%d %s (%s)", rec.id, verdict, channel)
        with store.transaction() as session:
            session.execute(delete(ImplicitWatch).where(ImplicitWatch.recommendation_id == rec.id))
    return report
