"""The person's answered recommendations, in the shape the runners read."""

from __future__ import annotations

import json
from datetime import date, timedelta
from typing import Any

from sqlalchemy import select
from sqlmodel import col

from bridge.runner.base import STATED
from bridge.store import Store
from bridge.store.models import Feedback, MeterSnapshot, Recommendation
from mappings.actions import METERS
from mappings.slots import SlotKey

HISTORY_DAYS = 30


def interaction_history(
    store: Store,
    before: SlotKey,
    days: int = HISTORY_DAYS,
    *,
    after: date | None = None,
    with_dates: bool = False,
) -> list[dict[str, Any]]:
    """Past recommendations that got an answer, oldest first, in the runner's shape.

    `after` drops days up to and including that date; `with_dates` adds "local_date".
    """
    since = before.local_date - timedelta(days=days)
    if after is not None:
        since = max(since, after + timedelta(days=1))
    with store.session() as session:
        rows = session.execute(
            select(Recommendation, Feedback)
            .join(Feedback, col(Feedback.recommendation_id) == col(Recommendation.id))
            .where(col(Recommendation.local_date) >= since)
            .order_by(col(Recommendation.local_date), col(Recommendation.slot))
        ).all()
        snaps = {
            (s.local_date, s.slot): s
            for s in session.execute(
                select(MeterSnapshot).where(col(MeterSnapshot.local_date) >= since)
            ).scalars()
        }
    history = []
    for rec, fb in rows:
        if (rec.local_date, rec.slot) >= (before.local_date, before.slot):
            continue
        key = SlotKey(rec.local_date, rec.slot)
        here, after = (
            snaps.get((key.local_date, key.slot)),
            snaps.get((key.next().local_date, key.next().slot)),
        )
        meters = {m: getattr(here, m) if here else None for m in METERS}
        deltas = {
            m: (getattr(after, m) - getattr(here, m))
            if here and after and getattr(after, m) is not None and getattr(here, m) is not None
            else None
            for m in METERS
        }
        item = {
            "day": key.day,
            "slot": key.slot,
            "meters": meters,
            "action": rec.action,
            "response": fb.response,
            "meter_deltas": deltas,
        }
        if rec.model_accept is not None:  # what the runner stated then (runner.recalibrate)
            item[STATED] = rec.model_accept
        # What the calendar looked like when it was recommended: an Ignore in a booked slot
        # says less about the person than one in a free evening.
        seen = json.loads(rec.observation or "{}")
        for field in ("free_minutes", "active_event"):
            if seen.get(field) is not None:
                item[field] = seen[field]
        if with_dates:
            item["local_date"] = key.local_date.isoformat()
        history.append(item)
    return history
