"""One cycle: sync due sources -> classify new events -> recompute meter slots ->
recommend for the coming slot -> write the JSON snapshot.

Every step is idempotent: running the same cycle twice leaves the same rows.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import String, select, type_coerce, update

from bridge.config import Settings
from bridge.errors import BridgeError, ConfigError
from bridge.sources import SyncOutcome, enabled_sources, is_due, run_source
from bridge.store import Store, upsert
from bridge.store.db import dumps, utcnow
from bridge.store.models import CalendarEvent, Feedback, MeterSnapshot, Reading, Recommendation
from connectors.base import ReadContext
from mappings.actions import ACTIONS, METERS
from mappings.slots import SlotKey, slot_bounds, slot_of_instant, slots_between

log = logging.getLogger("rhythm_bridge.cycle")

HISTORY_DAYS = 30
CLASSIFIER_VERSION_KEY = "classifier.version"
# Baselines look 60 days back from the day before a slot; weekly windows 7 days.
BASELINE_LOOKBACK_DAYS = 63
DEADLINE_DAYS = 8  # deadline proximity looks a week ahead
# Bounds the index scan when loading meter inputs: a reading or event that started longer
# ago than this before the window is not read (a month-long record is not a measurement).
LONGEST_RECORD = timedelta(days=31)


@dataclass
class CycleReport:
    now: datetime
    synced: list[SyncOutcome] = field(default_factory=list)
    classified: int = 0
    slots: int = 0
    recommendation: dict[str, Any] | None = None
    implicit: dict[str, list[int]] = field(default_factory=dict)
    notified: dict[str, str] = field(default_factory=dict)
    snapshot: str | None = None
    seconds: float = 0.0


@contextmanager
def data_lock(data_dir: Path, timeout: float = 120.0) -> Iterator[None]:
    """One cycle at a time per data dir (the daemon and a manual run must not overlap)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / ".cycle.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise BridgeError(
                        f"another rhythm-bridge cycle holds {path}; try again later"
                    ) from None
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def read_context(settings: Settings, now: datetime) -> ReadContext:
    return ReadContext(tz=settings.tz, now=now)


def classify_events(store: Store, settings: Settings) -> int:
    """Label every event that is new or changed since it was last labelled.

    Everything is labelled again when the classifier itself changed (rules, model or a
    correction); UNCLASSIFIED events are retried while an LLM is configured.
    """
    from bridge.classification import build_classifier, retrain_if_corrected, save_llm_state
    from mappings.actions import UNCLASSIFIED
    from mappings.classifier import EventInfo

    retrain_if_corrected(settings, store)
    classifier = build_classifier(settings, store)
    version = classifier.version
    changed = store.get_meta(CLASSIFIER_VERSION_KEY) != version
    stmt = select(CalendarEvent)
    if not changed:
        todo = CalendarEvent.classified_hash != CalendarEvent.content_hash
        if classifier.llm is not None:
            todo = todo | (CalendarEvent.action == UNCLASSIFIED)
        stmt = stmt.where(todo)
    with store.session() as session:
        rows = session.execute(stmt).scalars().all()
    # Classify outside the write transaction: an LLM call may take seconds.
    results = classifier.classify_many(
        [
            EventInfo(
                title=ev.title,
                event_type=ev.event_type,
                all_day=ev.all_day,
                attendee_count=ev.attendee_count,
                transparency=ev.transparency,
                duration_min=(ev.end_utc - ev.start_utc).total_seconds() / 60,
                start_hour=ev.start_utc.astimezone(settings.tz).hour,
            )
            for ev in rows
        ]
    )
    relabelled = 0
    with store.transaction() as session:
        for ev, result in zip(rows, results, strict=True):
            new = (result.action, result.confidence, result.layer, ev.content_hash)
            if (ev.action, ev.action_confidence, ev.action_layer, ev.classified_hash) == new:
                continue
            # Only if the event is unchanged since it was read (a sync may run meanwhile).
            relabelled += session.execute(
                update(CalendarEvent)
                .where(CalendarEvent.id == ev.id, CalendarEvent.content_hash == ev.content_hash)
                .values(
                    action=result.action,
                    action_confidence=result.confidence,
                    action_layer=result.layer,
                    classified_hash=ev.content_hash,
                )
            ).rowcount
        if changed:
            store.set_meta(session, CLASSIFIER_VERSION_KEY, version)
    save_llm_state(store, settings, classifier.llm)  # type: ignore[arg-type]
    return relabelled


def _frames(
    store: Store, lo: datetime, hi: datetime, events_hi: datetime | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The meter inputs overlapping [lo, hi) (events up to `events_hi`, for deadlines)."""
    from mappings.frames import (
        EVENT_COLUMNS,
        READING_COLUMNS,
        USED_METRICS,
        empty_events,
        empty_readings,
    )

    r, e = Reading.__table__, CalendarEvent.__table__  # type: ignore[attr-defined]

    def raw(table: Any, column: str) -> Any:
        # Instants as the database returns them (text on SQLite): pandas parses them in
        # bulk, much faster than one aware datetime per row.
        col = table.c[column]
        return type_coerce(col, String).label(column) if column.endswith("_utc") else col

    with store.session() as session:
        readings = session.execute(
            select(*(raw(r, c) for c in READING_COLUMNS)).where(
                r.c.metric.in_(sorted(USED_METRICS)),
                r.c.start_utc >= lo - LONGEST_RECORD,
                r.c.start_utc < hi,
                r.c.end_utc >= lo,
            )
        ).all()
        events = session.execute(
            select(*(raw(e, c) for c in EVENT_COLUMNS)).where(
                e.c.start_utc >= lo - LONGEST_RECORD,
                e.c.start_utc < (events_hi or hi),
                e.c.end_utc >= lo,
            )
        ).all()
    # Plain tuples: pandas probes each SQLAlchemy Row for attributes, which is slow.
    rf = (
        pd.DataFrame(list(map(tuple, readings)), columns=READING_COLUMNS)
        if readings
        else empty_readings()
    )
    ef = pd.DataFrame(list(map(tuple, events)), columns=EVENT_COLUMNS) if events else empty_events()
    return rf, ef


def current_slot(settings: Settings, now: datetime) -> SlotKey:
    return slot_of_instant(now, settings.tz, settings.boundaries)


def meter_weights(settings: Settings) -> Any:
    """The meter weights: the bundled file, or the person's own laid over it."""
    from mappings.meters import WeightsError, load_weights

    path = settings.meters.weights_file
    try:
        return load_weights(Path(path) if path else None)
    except WeightsError as err:
        raise ConfigError(f"config key 'meters.weights_file': {err}") from None


def recompute_meters(store: Store, settings: Settings, now: datetime, *, full: bool = False) -> int:
    """Recompute the export window's meter slots whose inputs changed since the last run.

    Plus the current slot and the one that was current last time; `full=True` (or new
    weights, zone or slot boundaries) redoes the whole window. Idempotent: the same state
    and `now` give the same rows. Returns how many slots were computed.
    """
    from bridge.meter_changes import (
        STATE_KEY,
        MeterState,
        fingerprints,
        first_changed_day,
        slots_to_recompute,
    )
    from mappings.meters import compute_slots

    weights = meter_weights(settings)
    tz, bounds = settings.tz, settings.boundaries
    last = current_slot(settings, now)
    first = SlotKey(last.local_date - timedelta(days=settings.export.days - 1), 0)
    window = slots_between(first, last)
    lookback = timedelta(days=BASELINE_LOOKBACK_DAYS)
    window_lo = slot_bounds(first.prev(), tz, bounds)[0]
    hi = slot_bounds(last, tz, bounds)[1] + timedelta(days=1)
    since = window_lo - lookback
    prints = fingerprints(
        store, since, hi + timedelta(days=DEADLINE_DAYS), weights.calendar_rules().deadline_pattern
    )
    config = f"{weights.version}|{tz}|{','.join(b.isoformat() for b in bounds)}"
    state = None if full else MeterState.load(store)
    if state is None or state.config != config:
        todo = window
    else:
        with store.session() as session:
            stored = {
                (d, s)
                for d, s in session.execute(
                    select(MeterSnapshot.local_date, MeterSnapshot.slot).where(
                        MeterSnapshot.local_date >= first.local_date
                    )
                )
            }
        last_current = (
            current_slot(settings, datetime.fromisoformat(state.as_of)) if state.as_of else None
        )
        todo = slots_to_recompute(
            window, stored, first_changed_day(state.days, prints, since.date()), last_current
        )
    # One contiguous run (every slot's delta needs the one before), starting one slot
    # early so the first has its delta too.
    todo = [todo[0].prev(), *window[window.index(todo[0]) :]]
    lo = slot_bounds(todo[0], tz, bounds)[0] - lookback
    readings, events = _frames(store, lo, hi, hi + timedelta(days=DEADLINE_DAYS))
    results = compute_slots(
        readings, events, todo, tz=tz, now=now, boundaries=bounds, weights=weights
    )[1:]
    stamp = utcnow()
    rows = []
    for res in results:
        row: dict[str, Any] = {
            "local_date": res.key.local_date,
            "slot": res.key.slot,
            "day": res.key.day,
            "timestep": res.key.timestep,
            "mapping_version": res.mapping_version,
            "provenance": dumps({m: res.meters[m].provenance for m in METERS}),
            "deltas": dumps(res.deltas),
            "computed_at": stamp,
        }
        for m in METERS:
            row[m] = res.meters[m].value
            row[f"{m}_confidence"] = res.meters[m].confidence
        rows.append(row)
    new_state = MeterState(config, now.astimezone(UTC).isoformat(), prints)
    with store.transaction() as session:
        upsert(
            session,
            MeterSnapshot,
            rows,
            keys=("local_date", "slot"),
            update=tuple(k for k in rows[0] if k not in ("local_date", "slot", "computed_at")),
            touch=("computed_at",),
        )
        store.set_meta(session, STATE_KEY, new_state.dumps())
    return len(rows)


def target_slot(settings: Settings, now: datetime) -> SlotKey:
    """The slot to recommend for: this one, or the next when this one is nearly over."""
    key = current_slot(settings, now)
    _, end = slot_bounds(key, settings.tz, settings.boundaries)
    if end - now.astimezone(UTC) < timedelta(minutes=settings.schedule.recommend_lead_minutes):
        return key.next()
    return key


def observation_for(
    store: Store, settings: Settings, key: SlotKey, now: datetime
) -> dict[str, Any]:
    """The runner's view of a slot: the latest meters at or before it, plus the active event."""
    with store.session() as session:
        snap = session.execute(
            select(MeterSnapshot)
            .where(
                (MeterSnapshot.local_date < key.local_date)
                | ((MeterSnapshot.local_date == key.local_date) & (MeterSnapshot.slot <= key.slot))
            )
            .order_by(MeterSnapshot.local_date.desc(), MeterSnapshot.slot.desc())
            .limit(1)
        ).scalar_one_or_none()
        lo, hi = slot_bounds(key, settings.tz, settings.boundaries)
        event = session.execute(
            select(CalendarEvent.action)
            .where(
                CalendarEvent.start_utc < hi,
                CalendarEvent.end_utc > lo,
                CalendarEvent.status != "cancelled",
                CalendarEvent.all_day.is_(False),
                CalendarEvent.action.in_(ACTIONS),
            )
            .order_by(CalendarEvent.start_utc)
            .limit(1)
        ).scalar_one_or_none()
    obs: dict[str, Any] = {
        "timestep": key.timestep,
        "day": key.day,
        "slot": key.slot,
        "remaining_steps": 27 - key.timestep,
        "active_event": event,
    }
    for m in METERS:
        obs[m] = getattr(snap, m) if snap else None
    return obs


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
            .join(Feedback, Feedback.recommendation_id == Recommendation.id)
            .where(Recommendation.local_date >= since)
            .order_by(Recommendation.local_date, Recommendation.slot)
        ).all()
        snaps = {
            (s.local_date, s.slot): s
            for s in session.execute(
                select(MeterSnapshot).where(MeterSnapshot.local_date >= since)
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
        if with_dates:
            item["local_date"] = key.local_date.isoformat()
        history.append(item)
    return history


def configured_runner(settings: Settings, name: str | None = None) -> Any:
    """The runner the config names, built with its options; a bad option is a config error."""
    from bridge.runner import load_runner

    name = name or settings.runner.name
    options = dict(settings.runner.options) if name == settings.runner.name else {}
    adapter = settings.data_path / "adapter.json"
    if name == "bundled" and "adapter" not in options and adapter.exists():
        try:  # written by the weekly refit (bridge.adapter)
            return load_runner(name, **options, adapter=str(adapter))
        except BridgeError as err:  # a broken adapter must not stop recommendations
            log.warning("ignoring the adapter: %s", err)
    try:
        return load_runner(name, **options)
    except (ValueError, TypeError) as err:
        raise BridgeError(f"config key 'runner': {err}") from None


def recommend(
    store: Store, settings: Settings, now: datetime, *, runner_name: str | None = None
) -> Recommendation:
    """The recommendation for the coming slot; made once per slot and then kept."""
    key = target_slot(settings, now)
    with store.session() as session:
        existing = session.execute(
            select(Recommendation).where(
                Recommendation.local_date == key.local_date, Recommendation.slot == key.slot
            )
        ).scalar_one_or_none()
    if existing is not None:
        return existing
    obs = observation_for(store, settings, key, now)
    runner = configured_runner(settings, runner_name)
    history = interaction_history(store, key, after=getattr(runner, "history_since", None))
    rec = runner.recommend(obs, history)
    row = {
        "local_date": key.local_date,
        "slot": key.slot,
        "timestep": key.timestep,
        "action": rec.action,
        "belief": json.dumps(rec.belief),
        "rationale": rec.rationale,
        "runner": rec.runner,
        "runner_version": rec.runner_version,
        "observation": dumps(obs),
        "fallback_reason": rec.fallback_reason,
        "created_at": utcnow(),
    }
    with store.transaction() as session:
        upsert(session, Recommendation, [row], keys=("local_date", "slot"))
        return session.execute(
            select(Recommendation).where(
                Recommendation.local_date == key.local_date, Recommendation.slot == key.slot
            )
        ).scalar_one()


def answer_implicitly(store: Store, settings: Settings, now: datetime) -> dict[str, list[int]]:
    """Calendar-driven accepts and reschedules, and expiry of unanswered recommendations."""
    from bridge.implicit import detect

    found = detect(store, settings, now)
    return {"accepted": found.accepted, "rescheduled": found.rescheduled, "expired": found.expired}


def announce(store: Store, settings: Settings, rec: Recommendation, now: datetime) -> dict:
    """Notify about the recommendation once per channel; a failing notifier never stops a cycle."""
    from bridge.notify import notify_recommendation

    try:
        return notify_recommendation(store, settings, rec, now)
    except Exception:
        log.exception("notifications crashed; the cycle goes on")
        return {}


def run_cycle(
    settings: Settings,
    store: Store,
    now: datetime | None = None,
    *,
    only: list[str] | None = None,
    force_sync: bool = False,
) -> CycleReport:
    """Run one full cycle; sources that fail are recorded and the rest carry on."""
    from bridge.export import build_snapshot, write_snapshot

    started = time.perf_counter()
    now = (now or datetime.now(UTC)).astimezone(UTC)
    report = CycleReport(now=now)
    with data_lock(settings.data_path):
        ctx = read_context(settings, now)
        for source in only if only is not None else enabled_sources(settings):
            if force_sync or is_due(store, settings, source, now):
                report.synced.append(run_source(store, settings, source, ctx))
        report.classified = classify_events(store, settings)
        report.slots = recompute_meters(store, settings, now)
        rec = recommend(store, settings, now)
        report.recommendation = {"id": rec.id, "action": rec.action, "rationale": rec.rationale}
        report.implicit = answer_implicitly(store, settings, now)
        report.notified = announce(store, settings, rec, now)
        doc = build_snapshot(store, settings, now)
        report.snapshot = str(write_snapshot(doc, settings.export_path))
        with store.transaction() as session:
            store.set_meta(session, "last_cycle_at", now.isoformat())
    report.seconds = time.perf_counter() - started
    log.info(
        "cycle synced=%d classified=%d slots=%d recommendation=%s seconds=%.2f",
        len(report.synced),
        report.classified,
        report.slots,
        rec.action,
        report.seconds,
    )
    return report
