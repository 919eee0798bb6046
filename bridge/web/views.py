"""What the page and the API show, assembled from the store (no HTTP here)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlmodel import col

from bridge.config import Settings
from bridge.out.snapshot import (
    answer_of,
    answered_document,
    current_recommendation,
    events_of_day,
    no_window_document,
    rationale_now,
    recommendation_document,
    rescheduled_to,
    slot_documents,
)
from bridge.store import Store
from bridge.store.models import Feedback, Recommendation
from mappings.actions import BELIEF_AXES, METERS
from mappings.ages import human_age
from mappings.slots import SLOT_NAMES

TREND_DAYS = 7
HISTORY_LIMIT = 20


def meters(store: Store, settings: Settings, now: datetime, days: int = TREND_DAYS) -> dict:
    """The current slot's meters and every slot of the last `days` local days up to now."""
    from bridge.clock import current_slot

    cur = current_slot(settings, now)
    since = cur.local_date - timedelta(days=days - 1)
    history = slot_documents(store, since, cur)
    here = (cur.local_date.isoformat(), cur.slot)
    current = next((h for h in reversed(history) if (h["date"], h["slot"]) == here), None)
    return {
        "date": cur.local_date.isoformat(),
        "slot": cur.slot,
        "slot_name": SLOT_NAMES[cur.slot],
        "current": current,
        "history": history,
    }


# Above this posterior sd an axis of the belief is shown as "not sure yet": a belief that
# knows nothing (the bundled model's prior) has an sd of about 0.27 per axis; in simulation
# it falls below 0.15 after roughly a week of answers.
UNSURE_SD = 0.15


def recommendation(store: Store, settings: Settings, now: datetime) -> dict[str, Any] | None:
    """The recommendation the page's buttons answer (see current_recommendation), with the
    runner's uncertainty about its belief (`belief_sd`, None if it stated none)."""
    doc = current_recommendation(store, settings, now)
    if doc is not None:
        with store.session() as session:
            row = session.get(Recommendation, doc["id"])
            doc["belief_sd"] = json.loads(row.belief_sd) if row and row.belief_sd else None
        doc["rationale"] = rationale_now(store, doc["rationale"])
        moved = rescheduled_to(store, doc["id"]) if doc["response"] else None
        doc["rescheduled_to"] = (
            answered_document(moved, answer_of(store, moved.id), settings.tz) if moved else None
        )
    return doc


def no_window(store: Store, settings: Settings, now: datetime) -> dict[str, Any] | None:
    """Why nothing is recommended, when the calendar leaves no window in the look-ahead."""
    return no_window_document(store, settings, now)


def interaction_history(
    store: Store, limit: int = HISTORY_LIMIT, tz: Any = None
) -> list[dict[str, Any]]:
    """The latest recommendations, newest first, with the answer each got (or none yet)."""
    with store.session() as session:
        rows = session.execute(
            select(Recommendation, Feedback)
            .outerjoin(Feedback, col(Feedback.recommendation_id) == col(Recommendation.id))
            .order_by(col(Recommendation.local_date).desc(), col(Recommendation.slot).desc())
            .limit(limit)
        ).all()
    return [answered_document(rec, fb, tz) for rec, fb in rows]


def events_today(store: Store, settings: Settings, now: datetime) -> list[dict[str, Any]]:
    from bridge.clock import current_slot

    return events_of_day(store, settings, current_slot(settings, now).local_date, with_ids=True)


def status(store: Store, settings: Settings) -> dict[str, Any]:
    """Per-source sync status; the database URL stays out (it may name a user)."""
    from bridge.out.status import collect_status

    doc = collect_status(settings, store)
    doc.pop("database", None)
    return doc


def belief_rows(
    belief: list[float] | None, sd: list[float] | None = None
) -> list[dict[str, Any]] | None:
    """[S, M, W] as labelled rows for the page; None when the runner has no belief.

    An axis whose posterior sd is above UNSURE_SD is marked `unsure` ("not sure yet").
    """
    if not belief:
        return None
    sds = list(sd) if sd and len(sd) == len(belief) else [None] * len(belief)
    return [
        {"axis": axis, "value": value, "sd": s, "unsure": s is not None and s > UNSURE_SD}
        for axis, value, s in zip(BELIEF_AXES, belief, sds, strict=False)
    ]


def meter_cards(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One card per meter: the value now, its confidence or why it is empty, its trend."""
    cur = doc["current"]
    cards = []
    for m in METERS:
        reason = None
        if cur is not None and cur[m] is None:
            reason = cur["provenance"][m].get("reason")
        fresh = ((cur or {}).get("freshness") or {}).get(m) or {}
        cards.append(
            {
                "name": m,
                "age": human_age(fresh["age_hours"])
                if fresh.get("age_hours") is not None
                else None,
                "stale": bool(fresh.get("stale")),
                "value": cur[m] if cur else None,
                "confidence": cur["confidence"][m] if cur else None,
                "reason": reason or (None if cur else "no meters for this slot yet"),
                "series": [h[m] for h in doc["history"]],
                # Which weights made it: the person's fitted ones or the bundled ones.
                "fitted": cur is not None
                and (cur["provenance"][m] or {}).get("weights") == "fitted to you",
            }
        )
    return cards


def proposal(store: Store, settings: Settings, rec_id: str | None) -> dict[str, Any] | None:
    """The window a Reschedule just proposed (from the page's redirect), if it exists."""
    if not rec_id or not rec_id.isdigit():
        return None
    with store.session() as session:
        rec = session.get(Recommendation, int(rec_id))
        return recommendation_document(rec, None, settings.tz) if rec else None
