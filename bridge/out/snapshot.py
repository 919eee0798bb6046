"""The JSON snapshot: versioned, RhythmEnv field names, written atomically.

The document is described by `bridge/schemas/snapshot.schema.json`; tests validate real
output against it. It never contains tokens or secrets; it does contain event titles
(it is the person's own file, written to their own disk).
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import UTC, date, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

from sqlalchemy import delete, select
from sqlmodel import col

from bridge.config import Settings
from bridge.files import private_dir
from bridge.out import SNAPSHOT_SCHEMA_ID
from bridge.store import Store
from bridge.store.models import (
    CalendarEvent,
    Feedback,
    Meta,
    MeterSnapshot,
    Reading,
    Recommendation,
    SyncState,
)
from mappings.actions import METERS
from mappings.slots import SLOT_NAMES, SlotKey, day_bounds
from mappings.vocabulary import VENDOR_SCORES

# 1.1 added the recommendation's "window" and "window_reason" (additive: a reader of 1
# keeps working when it ignores unknown fields). 1.2 added "no_window": set (and
# "recommendation" null) when the calendar leaves no window in the whole look-ahead.
# 1.3 added "vendor_scores": the vendors' own scores, shown beside the meters.
SCHEMA_ID = SNAPSHOT_SCHEMA_ID
NO_WINDOW_META = "no_window"


def utcnow_aware() -> datetime:
    return datetime.now(UTC)


def iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z") if value else None


def slot_document(snap: MeterSnapshot) -> dict[str, Any]:
    provenance = json.loads(snap.provenance or "{}")
    deltas = json.loads(snap.deltas or "{}")
    doc: dict[str, Any] = {
        "date": snap.local_date.isoformat(),
        "timestep": snap.timestep,
        "day": snap.day,
        "slot": snap.slot,
        "slot_name": SLOT_NAMES[snap.slot],
    }
    for m in METERS:
        doc[m] = getattr(snap, m)
    doc["confidence"] = {m: getattr(snap, f"{m}_confidence") for m in METERS}
    doc["provenance"] = {m: dict(provenance.get(m, {})) for m in METERS}
    # Kept inside provenance in the store; a field of its own in the document.
    doc["freshness"] = {m: doc["provenance"][m].pop("freshness", None) for m in METERS}
    doc["deltas"] = {m: deltas.get(m) for m in METERS}
    doc["mapping_version"] = snap.mapping_version
    return doc


def local_iso(value: datetime, tz: tzinfo | None) -> str:
    """ISO 8601 with the person's UTC offset, so a reader sees wall time and the instant."""
    return value.astimezone(tz or UTC).isoformat()


def window_document(rec: Recommendation, tz: tzinfo | None) -> dict[str, str] | None:
    if rec.window_start is None or rec.window_end is None:
        return None
    return {"start": local_iso(rec.window_start, tz), "end": local_iso(rec.window_end, tz)}


LEGACY_WINDOW_REASON = "made before recommendations had calendar windows"


def recommendation_document(
    rec: Recommendation, fb: Feedback | None, tz: tzinfo | None = None
) -> dict[str, Any]:
    window = window_document(rec, tz)
    reason = rec.window_reason
    if window is None and reason is None:
        reason = LEGACY_WINDOW_REASON
    return {
        "id": rec.id,
        "date": rec.local_date.isoformat(),
        "slot": rec.slot,
        "slot_name": SLOT_NAMES[rec.slot],
        "timestep": rec.timestep,
        "action": rec.action,
        "belief": json.loads(rec.belief),
        "rationale": rec.rationale,
        "runner": rec.runner,
        "runner_version": rec.runner_version,
        "fallback_reason": rec.fallback_reason,
        "created_at": iso(rec.created_at),
        "response": fb.response if fb else None,
        "window": window,
        "window_reason": reason,
    }


def load_no_window(store: Store) -> dict[str, Any] | None:
    """The stored no-window state as the cycle saved it (UTC instants), or None."""
    raw = store.get_meta(NO_WINDOW_META)
    return json.loads(raw) if raw else None


def save_no_window(
    store: Store,
    key: SlotKey,
    reason: str,
    look_ahead_until: datetime,
    next_window: tuple[datetime, datetime] | None,
) -> None:
    """Keep the no-window state for the coming slot `key`.

    While the calendar stays full from one cycle to the next it is the same episode: when
    it began and the channels already told are kept, so nobody is told again every slot.
    """
    before = load_no_window(store) or {}
    doc = {
        "date": key.local_date.isoformat(),
        "slot": key.slot,
        "reason": reason,
        "look_ahead_until": iso(look_ahead_until),
        "next_window": [iso(next_window[0]), iso(next_window[1])] if next_window else None,
        "since": before.get("since") or iso(utcnow_aware()),
        "notified": before.get("notified", []),
    }
    with store.transaction() as session:
        store.set_meta(session, NO_WINDOW_META, json.dumps(doc))


def mark_no_window_notified(store: Store, channel: str) -> None:
    doc = load_no_window(store)
    if doc is None or channel in doc["notified"]:
        return
    doc["notified"].append(channel)
    with store.transaction() as session:
        store.set_meta(session, NO_WINDOW_META, json.dumps(doc))


def clear_no_window(store: Store) -> None:
    """A recommendation was made: the episode of a full calendar is over."""
    if store.get_meta(NO_WINDOW_META) is None:
        return
    with store.transaction() as session:
        session.execute(delete(Meta).where(col(Meta.key) == NO_WINDOW_META))


def no_window_document(
    store: Store, settings: Settings, now: datetime, tz: tzinfo | None = None
) -> dict[str, Any] | None:
    """Why there is no recommendation for the coming slot, when that is so; else None.

    Shown only while it is about the coming slot (or a later one) and no recommendation
    is there: a state left from an earlier slot, or one a new recommendation ended, is not.
    """
    from bridge.clock import target_slot

    doc = load_no_window(store)
    if doc is None:
        return None
    target = target_slot(settings, now)
    key = SlotKey(date.fromisoformat(doc["date"]), doc["slot"])
    if (key.local_date, key.slot) < (target.local_date, target.slot):
        return None
    with store.session() as session:
        if upcoming_recommendation(session, target) is not None:
            return None
    return no_window_view(doc, tz or settings.tz)


def no_window_view(doc: dict[str, Any], tz: tzinfo | None) -> dict[str, Any]:
    """The stored state as the outputs show it: instants in the person's offset."""
    nxt = doc.get("next_window")
    return {
        "date": doc["date"],
        "slot": doc["slot"],
        "slot_name": SLOT_NAMES[doc["slot"]],
        "reason": doc["reason"],
        "look_ahead_until": local_iso(datetime.fromisoformat(doc["look_ahead_until"]), tz),
        "next_window": {
            "start": local_iso(datetime.fromisoformat(nxt[0]), tz),
            "end": local_iso(datetime.fromisoformat(nxt[1]), tz),
        }
        if nxt
        else None,
        "since": doc["since"],
    }


def answer_of(store: Store, recommendation_id: int | None) -> Feedback | None:
    """The answer given to a recommendation, if any (there is at most one)."""
    if recommendation_id is None:
        return None
    with store.session() as session:
        return session.execute(
            select(Feedback).where(col(Feedback.recommendation_id) == recommendation_id)
        ).scalar_one_or_none()


def rescheduled_to(store: Store, recommendation_id: int | None) -> Recommendation | None:
    """The window a Reschedule of this recommendation proposed (a recommendation of its own,
    `rescheduled_from` it), or None."""
    if recommendation_id is None:
        return None
    with store.session() as session:
        return session.execute(
            select(Recommendation).where(col(Recommendation.rescheduled_from) == recommendation_id)
        ).scalar_one_or_none()


# How the bundled model's rationale starts when it was made before any answer existed.
NO_ANSWERS = "no answers yet; starting from the population prior"
MADE_BEFORE_ANSWERS = "made before your first answer, from the population prior"


def rationale_now(store: Store, rationale: str | None) -> str | None:
    """The rationale as a person reads it now: "no answers yet" was true when it was made,
    and is reworded once any answer exists (the stored text and the JSON keep it)."""
    if not rationale or not rationale.startswith(NO_ANSWERS):
        return rationale
    with store.session() as session:
        if session.execute(select(col(Feedback.id)).limit(1)).first() is None:
            return rationale
    return MADE_BEFORE_ANSWERS + rationale[len(NO_ANSWERS) :]


def upcoming_recommendation(
    session: Any, key: SlotKey
) -> tuple[Recommendation, Feedback | None] | None:
    """The recommendation for `key`, else the first one after it (a busy slot's moved on)."""
    row = session.execute(
        select(Recommendation, Feedback)
        .outerjoin(Feedback, col(Feedback.recommendation_id) == col(Recommendation.id))
        .where(
            (col(Recommendation.local_date) > key.local_date)
            | ((Recommendation.local_date == key.local_date) & (Recommendation.slot >= key.slot))
        )
        .order_by(col(Recommendation.local_date), col(Recommendation.slot))
        .limit(1)
    ).first()
    return (row[0], row[1]) if row else None


def answered_document(rec: Recommendation, fb: Feedback | None, tz: Any = None) -> dict[str, Any]:
    """The recommendation with how and when it was answered (the page, the API, MQTT)."""
    doc = recommendation_document(rec, fb, tz)
    doc["channel"] = fb.channel if fb else None
    doc["answered_at"] = iso(fb.created_at) if fb else None
    return doc


def current_recommendation(
    store: Store, settings: Settings, now: datetime
) -> dict[str, Any] | None:
    """What the buttons answer: the recommendation for the coming slot (or the later one a
    busy slot moved it to), else the current slot's; None if neither, or when the calendar
    leaves no window in the look-ahead (then there is nothing to answer: see no_window)."""
    from bridge.clock import current_slot, target_slot

    gap = no_window_document(store, settings, now)
    with store.session() as session:
        found = upcoming_recommendation(session, target_slot(settings, now))
        if found is None and gap is None:
            cur = current_slot(settings, now)
            row = session.execute(
                select(Recommendation, Feedback)
                .outerjoin(Feedback, col(Feedback.recommendation_id) == col(Recommendation.id))
                .where(
                    col(Recommendation.local_date) == cur.local_date,
                    col(Recommendation.slot) == cur.slot,
                )
            ).first()
            found = (row[0], row[1]) if row else None
    return answered_document(*found, settings.tz) if found else None


def events_of_day(
    store: Store, settings: Settings, day: date, *, with_ids: bool = False
) -> list[dict[str, Any]]:
    """The day's events with their labels; `with_ids` adds the row id (the web page's handle)."""
    lo, hi = day_bounds(day, settings.tz, settings.boundaries)
    with store.session() as session:
        rows = (
            session.execute(
                select(CalendarEvent)
                .where(
                    col(CalendarEvent.start_utc) < hi,
                    col(CalendarEvent.end_utc) > lo,
                    col(CalendarEvent.status) != "cancelled",
                )
                .order_by(col(CalendarEvent.start_utc), col(CalendarEvent.title))
            )
            .scalars()
            .all()
        )
    return [
        {
            **({"id": ev.id} if with_ids else {}),
            "title": ev.title,
            "start": iso(ev.start_utc),
            "end": iso(ev.end_utc),
            "all_day": ev.all_day,
            "action": ev.action,
            "confidence": ev.action_confidence,
            "layer": ev.action_layer,
            "source": ev.source,
        }
        for ev in rows
    ]


def source_documents(store: Store) -> list[dict[str, Any]]:
    with store.session() as session:
        rows = (
            session.execute(
                select(SyncState).order_by(SyncState.source, SyncState.stream, SyncState.partition)
            )
            .scalars()
            .all()
        )
    return [
        {
            "source": s.source,
            "stream": s.stream,
            "status": s.status,
            "last_success": iso(s.last_success_at),
            "last_error": s.last_error,
            "last_error_at": iso(s.last_error_at),
            "records_total": s.records_total,
        }
        for s in rows
    ]


# A vendor score older than this is not "beside" today's meters any more.
VENDOR_SCORE_HOURS = 36


def vendor_score_documents(store: Store, now: datetime) -> list[dict[str, Any]]:
    """The newest value of each vendor score per source within VENDOR_SCORE_HOURS.

    References to compare the meters with (mappings/vocabulary.py VENDOR_SCORES): Fitbit's
    sleep score, WHOOP's recovery, Garmin's Body Battery and sleep score, ...
    """
    since = now - timedelta(hours=VENDOR_SCORE_HOURS)
    by_metric = {score.metric: score for score in VENDOR_SCORES}
    stmt = (
        select(
            col(Reading.metric),
            col(Reading.source),
            col(Reading.label),
            col(Reading.value),
            col(Reading.end_utc),
        )
        .where(
            col(Reading.metric).in_(list(by_metric)),
            col(Reading.end_utc) >= since,
            col(Reading.end_utc) <= now,
        )
        .order_by(col(Reading.end_utc).desc())
    )
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    with store.session() as session:
        for metric, source, label, value, end in session.execute(stmt):
            score = by_metric[metric]
            if label not in score.labels or value is None or (metric, source) in newest:
                continue
            newest[(metric, source)] = {
                "metric": metric,
                "name": score.name,
                "source": source,
                "value": round(float(value), 1),
                "unit": score.unit,
                "at": iso(end),
            }
    order = {score.metric: i for i, score in enumerate(VENDOR_SCORES)}
    return sorted(newest.values(), key=lambda d: (order[d["metric"]], d["source"]))


def slot_documents(store: Store, since: date, until: SlotKey) -> list[dict[str, Any]]:
    """The stored slots from local date `since` up to and including slot `until`."""
    with store.session() as session:
        snaps = (
            session.execute(
                select(MeterSnapshot)
                .where(col(MeterSnapshot.local_date) >= since)
                .order_by(col(MeterSnapshot.local_date), col(MeterSnapshot.slot))
            )
            .scalars()
            .all()
        )
    return [
        slot_document(s) for s in snaps if (s.local_date, s.slot) <= (until.local_date, until.slot)
    ]


def slots_between(
    store: Store, first: date, last: date, slot: int | None = None
) -> list[dict[str, Any]]:
    """The stored slots of local dates `first` to `last` (only slot `slot` if given), in order."""
    stmt = select(MeterSnapshot).where(
        col(MeterSnapshot.local_date) >= first, col(MeterSnapshot.local_date) <= last
    )
    if slot is not None:
        stmt = stmt.where(col(MeterSnapshot.slot) == slot)
    order = (col(MeterSnapshot.local_date), col(MeterSnapshot.slot))
    with store.session() as session:
        return [slot_document(s) for s in session.execute(stmt.order_by(*order)).scalars()]


def stored_slot(store: Store, key: SlotKey) -> dict[str, Any] | None:
    """The stored slot `key` (None: not stored)."""
    with store.session() as session:
        found = session.execute(
            select(MeterSnapshot).where(
                col(MeterSnapshot.local_date) == key.local_date, col(MeterSnapshot.slot) == key.slot
            )
        ).scalar_one_or_none()
        return slot_document(found) if found else None


def build_snapshot(
    store: Store, settings: Settings, now: datetime, since: date | None = None
) -> dict[str, Any]:
    """The snapshot document as of `now`."""
    from bridge.clock import current_slot, target_slot

    cur: SlotKey = current_slot(settings, now)
    since = since or cur.local_date - timedelta(days=settings.export.days - 1)
    slots = slot_documents(store, since, cur)
    target = target_slot(settings, now)
    with store.session() as session:
        found = upcoming_recommendation(session, target)
    current = next(
        (
            s
            for s in reversed(slots)
            if (s["date"], s["slot"]) == (cur.local_date.isoformat(), cur.slot)
        ),
        None,
    )
    return {
        "schema": SCHEMA_ID,
        "generated_at": iso(now),
        "timezone": str(settings.tz),
        "current": current,
        "slots": slots,
        "recommendation": recommendation_document(*found, settings.tz) if found else None,
        "no_window": None if found else no_window_document(store, settings, now),
        "events_today": events_of_day(store, settings, cur.local_date),
        "sources": source_documents(store),
        "vendor_scores": vendor_score_documents(store, now),
    }


def write_snapshot(doc: dict[str, Any], path: Path) -> Path:
    """Write atomically: a temp file in the same folder, fsync, rename.

    A crash or a full disk leaves the previous file intact.
    """
    path = Path(path)
    private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=2, ensure_ascii=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
