"""The cycle's meter step: recompute the slots whose inputs changed, and store them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import String, func, select, type_coerce

from bridge.clock import current_slot
from bridge.config import Settings
from bridge.errors import ConfigError
from bridge.store import Store, upsert
from bridge.store.db import dumps, person_of, utcnow
from bridge.store.models import CalendarEvent, MeterSnapshot, Reading, Task, TaskChange
from mappings.actions import METERS
from mappings.freshness import FreshnessRules
from mappings.slots import SlotKey, slot_bounds, slot_of_instant, slots_between

# Baselines look 60 days back from the day before a slot; weekly windows 7 days.
BASELINE_LOOKBACK_DAYS = 63


DEADLINE_DAYS = 8  # deadline proximity looks a week ahead


# Bounds the index scan when loading meter inputs: a reading or event that started longer
# ago than this before the window is not read (a month-long record is not a measurement).
LONGEST_RECORD = timedelta(days=31)

# A backfill loads and computes this many days at a time: a Pi's memory holds a chunk of
# a decade of history, not all of it.
CHUNK_DAYS = 366

# Part of the meter state: a state written before the written days were noted by the
# database (migration i17_meter_changes) cannot vouch for the older days, so it recomputes.
CHANGES_VERSION = "changes1"


def load_frames(
    store: Store, lo: datetime, hi: datetime, events_hi: datetime | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The meter inputs overlapping [lo, hi) (events up to `events_hi`, for deadlines)."""
    from mappings.frames import (
        EVENT_COLUMNS,
        READING_COLUMNS,
        SOURCE_COLUMN,
        USED_METRICS,
        empty_events,
        empty_readings,
    )

    columns = [*READING_COLUMNS, SOURCE_COLUMN]
    r, e = Reading.__table__, CalendarEvent.__table__  # type: ignore[attr-defined]

    def raw(table: Any, column: str) -> Any:
        # Instants as the database returns them (text on SQLite): pandas parses them in
        # bulk, much faster than one aware datetime per row.
        col = table.c[column]
        return type_coerce(col, String).label(column) if column.endswith("_utc") else col

    with store.session() as session:
        person = person_of(session)
        readings = session.execute(
            select(*(raw(r, c) for c in columns)).where(
                r.c.person == person,
                r.c.metric.in_(sorted(USED_METRICS)),
                r.c.start_utc >= lo - LONGEST_RECORD,
                r.c.start_utc < hi,
                r.c.end_utc >= lo,
            )
        ).all()
        events = session.execute(
            select(*(raw(e, c) for c in EVENT_COLUMNS)).where(
                e.c.person == person,
                e.c.start_utc >= lo - LONGEST_RECORD,
                e.c.start_utc < (events_hi or hi),
                e.c.end_utc >= lo,
            )
        ).all()
    # Plain tuples: pandas probes each SQLAlchemy Row for attributes, which is slow.
    rf = pd.DataFrame(list(map(tuple, readings)), columns=columns) if readings else empty_readings()
    ef = pd.DataFrame(list(map(tuple, events)), columns=EVENT_COLUMNS) if events else empty_events()
    return rf, ef


def _task_frame(store: Store, lo: datetime, hi: datetime) -> pd.DataFrame | None:
    """Every change of the tasks that can matter in [lo, hi), their title, action and due
    joined on (None: the person has no task source). A task that was done or gone before
    `lo` and has not changed since cannot move a slot of the window, so it is not read."""
    from mappings.tasks import TASK_COLUMNS

    t, h = Task.__table__, TaskChange.__table__  # type: ignore[attr-defined]
    with store.session() as session:
        person = person_of(session)
        if session.execute(select(t.c.id).where(t.c.person == person).limit(1)).first() is None:
            return None
        rows = session.execute(
            select(
                h.c.task_id,
                h.c.kind,
                type_coerce(h.c.at_utc, String),
                type_coerce(t.c.due_utc, String),
                t.c.title,
                t.c.action,
            )
            .join(t, t.c.id == h.c.task_id)
            .where(
                h.c.person == person,
                t.c.person == person,
                h.c.at_utc < hi,
                (t.c.updated_at >= lo) | ((t.c.status == "open") & t.c.deleted.is_(False)),
            )
            .order_by(h.c.task_id, h.c.at_utc, h.c.id)
        ).all()
    return pd.DataFrame(list(map(tuple, rows)), columns=TASK_COLUMNS)


def meter_weights(settings: Settings) -> Any:
    """The meter weights: the bundled file, or the person's own laid over it."""
    from mappings.meters import WeightsError, load_weights

    path = settings.meters.weights_file
    try:
        return load_weights(Path(path) if path else None)
    except WeightsError as err:
        raise ConfigError(f"config key 'meters.weights_file': {err}") from None


FITTED_KEY = "fitted_weights"


def person_weights(store: Store, settings: Settings) -> Any:
    """The weights that make this person's meters: `meter_weights`, with the weights fitted
    to the person laid over the meters where the forward check favoured them (stored by
    `rhythm-bridge validity --fit`, bridge/cycle/validity.py). The version says so, so
    snapshots and provenance name the weights, and a new fit recomputes the history."""
    import json
    from dataclasses import replace

    base = meter_weights(settings)
    raw = store.get_meta(FITTED_KEY)
    if not raw:
        return base
    doc = json.loads(raw)
    meters = {m: table for m, table in doc.get("meters", {}).items() if m in base.meters}
    if not meters:
        return base
    tables = {**base.meters, **{m: {k: float(w) for k, w in t.items()} for m, t in meters.items()}}
    # Meter versions are at most 32 characters (meter_snapshots.mapping_version).
    version = f"{base.version[:19]}+fit{doc.get('fitted_on', '').replace('-', '')}"[:32]
    return replace(base, version=version, meters=tables, fitted=frozenset(meters))


# Data cut off from the rest by more than this many days without a single reading or
# event (a handful of 2014 readings from an old phone, then a watch from 2025 on) is stray:
# the meters start where the data is dense, after the last such gap. See
# docs/guides/meters.md, "How far back".
STRAY_GAP_DAYS = 90


def _data_bound(
    session: Any, metrics: list[str], *, newest: bool, lo: Any = None, hi: Any = None
) -> datetime | None:
    """The newest (or oldest) start of a reading of `metrics` or of an event in [lo, hi)
    (either end open when None); None when there is none."""
    r = Reading.__table__  # type: ignore[attr-defined]
    e = CalendarEvent.__table__  # type: ignore[attr-defined]
    pick = func.max if newest else func.min
    person = person_of(session)

    def within(column: Any) -> list[Any]:
        return [
            column.table.c.person == person,
            *([column >= lo] if lo is not None else []),
            *([column < hi] if hi is not None else []),
        ]

    # One query per metric: each bound is one step down the (metric, start_utc) index,
    # where a GROUP BY walks the whole index on SQLite.
    found = [
        session.execute(
            select(pick(r.c.start_utc)).where(r.c.metric == metric, *within(r.c.start_utc))
        ).scalar()
        for metric in metrics
    ]
    found.append(
        session.execute(select(pick(e.c.start_utc)).where(*within(e.c.start_utc))).scalar()
    )
    known = [v if v.tzinfo else v.replace(tzinfo=UTC) for v in found if v is not None]
    if not known:
        return None
    return max(known) if newest else min(known)


def first_data_day(store: Store, settings: Settings, now: datetime | None = None) -> date | None:
    """The local date where the data a meter can use becomes dense (None: no data): the
    oldest reading or event, unless older data is cut off from the rest by more than
    STRAY_GAP_DAYS without any; then the first one after the last such gap.

    Walked back from the newest data before `now` (a calendar's future events do not count)
    in steps of up to STRAY_GAP_DAYS, each to the oldest start within the gap before the
    last: a few index lookups per step, not a scan of the readings."""
    from mappings.frames import USED_METRICS

    metrics = sorted(USED_METRICS)
    gap = timedelta(days=STRAY_GAP_DAYS)
    with store.session() as session:
        t = _data_bound(session, metrics, newest=True, hi=now or datetime.now(UTC))
        if t is None:  # nothing yet but future events: from the first of them
            t = _data_bound(session, metrics, newest=False)
        older = t
        while older is not None:
            t = older
            older = _data_bound(session, metrics, newest=False, lo=t - gap, hi=t)
    if t is None:
        return None
    return slot_of_instant(t, settings.tz, settings.boundaries).local_date


def history_start(
    store: Store, settings: Settings, last: SlotKey, first_day: date | None = None
) -> SlotKey:
    """The first slot the meters cover: the first day with data (`first_day` when known,
    else asked), at least the export window, at most `meters.history_days` back when that
    is set."""
    window = last.local_date - timedelta(days=settings.export.days - 1)
    first = min(first_day or first_data_day(store, settings) or window, window)
    if settings.meters.history_days:
        first = max(first, last.local_date - timedelta(days=settings.meters.history_days - 1))
    return SlotKey(first, 0)


def _first_missing(store: Store, first: SlotKey, last: SlotKey) -> SlotKey | None:
    """The first slot from `first` to `last` without a stored row (None: all there). A
    count says whether the whole days are all there; keys are read only when one is not."""
    m = MeterSnapshot.__table__  # type: ignore[attr-defined]
    end = last.local_date
    whole_days = (end - first.local_date).days
    with store.session() as session:
        mine = m.c.person == person_of(session)
        n = session.execute(
            select(func.count()).where(
                mine, m.c.local_date >= first.local_date, m.c.local_date < end
            )
        ).scalar_one()
        lo = end if n == 4 * whole_days else first.local_date
        found = {
            (d, s)
            for d, s in session.execute(
                select(m.c.local_date, m.c.slot).where(
                    mine, m.c.local_date >= lo, m.c.local_date <= end
                )
            )
        }
    for key in slots_between(max(first, SlotKey(lo, 0), key=_order), last):
        if (key.local_date, key.slot) not in found:
            return key
    return None


def _order(key: SlotKey) -> tuple[date, int]:
    return key.local_date, key.slot


Progress = Callable[[int, int], None]


def freshness_rules(settings: Settings) -> FreshnessRules:
    m = settings.meters
    return FreshnessRules(m.stale_after_hours, m.min_confidence)


def freshness_config(settings: Settings) -> str:
    """The freshness settings as part of the meter state: changing them recomputes."""
    rules = freshness_rules(settings)
    return f"{rules.stale_after_hours:g},{rules.min_confidence:g}"


def recompute_meters(
    store: Store,
    settings: Settings,
    now: datetime,
    *,
    full: bool = False,
    progress: Progress | None = None,
    chunk_days: int = CHUNK_DAYS,
) -> int:
    """Recompute the meter slots whose inputs changed since the last run, from the first
    day with data (see `history_start`) to now.

    Plus the current slot and the one that was current last time; `full=True` (or new
    weights, zone or slot boundaries) redoes every slot. Long runs go in chunks of
    `chunk_days` (bounded memory; `progress(done, total)` after each). Idempotent: the same
    state and `now` give the same rows. Returns how many slots were computed.
    """
    from bridge.cycle.meter_changes import (
        STATE_KEY,
        MeterState,
        fingerprints,
        first_changed_day,
        first_to_recompute,
        forget_taken,
        take_changes,
    )
    from mappings.meters import MeterRules, compute_slots

    weights = person_weights(store, settings)
    tz, bounds = settings.tz, settings.boundaries
    last = current_slot(settings, now)
    config = "|".join(
        (
            weights.version,
            str(tz),
            ",".join(b.isoformat() for b in bounds),
            freshness_config(settings),
            CHANGES_VERSION,
        )
    )
    state = None if full else MeterState.load(store)
    if state is not None and state.config != config:
        state = None
    # Taken before anything is read: a day written after this is noted again.
    taken = take_changes(store)
    known = date.fromisoformat(state.first) if state is not None and state.first else None
    if known is not None and taken.first_day_moved(known):
        known = None
    first_day = known or first_data_day(store, settings, now)
    first = history_start(store, settings, last, first_day)
    lookback = timedelta(days=BASELINE_LOOKBACK_DAYS)
    hi = slot_bounds(last, tz, bounds)[1] + timedelta(days=1)
    since = slot_bounds(first.prev(), tz, bounds)[0] - lookback
    pattern = weights.calendar_rules().deadline_pattern
    # Prints for the recent days only (the export window and its lookback, from a UTC
    # midnight, as when only the window was kept); the days before are found in `taken`.
    window_first = last.local_date - timedelta(days=settings.export.days - 1)
    recent = slot_bounds(SlotKey(window_first, 0).prev(), tz, bounds)[0] - lookback
    cut = datetime.combine(max(recent, since).date(), datetime.min.time(), tzinfo=UTC)
    # Tasks are read whole, keyed from `since`: an old task's change moves every slot
    # from its first day, however long ago.
    prints = fingerprints(store, cut, hi + timedelta(days=DEADLINE_DAYS), pattern, since)
    if state is None:
        start = first
    else:
        last_current = (
            current_slot(settings, datetime.fromisoformat(state.as_of)) if state.as_of else None
        )
        changed = [
            first_changed_day(state.days, prints, cut.date() - timedelta(days=1), since.date()),
            taken.first_changed_before(cut.date()),
        ]
        start = first_to_recompute(
            [_first_missing(store, first, last), last_current],
            min((d for d in changed if d is not None), default=None),
            last,
        )
        start = max(start, first, key=_order)
    # One contiguous run (every slot's delta needs the one before), starting one slot
    # early so the first has its delta too.
    todo = slots_between(start.prev(), last)
    size = max(1, chunk_days) * 4
    total, done, previous = len(todo) - 1, 0, None
    new_state = MeterState(
        config, now.astimezone(UTC).isoformat(), prints, first_day.isoformat() if first_day else ""
    )
    for at in range(0, len(todo), size):
        chunk = todo[at : at + size]
        lo = slot_bounds(chunk[0], tz, bounds)[0] - lookback
        chunk_hi = slot_bounds(chunk[-1], tz, bounds)[1] + timedelta(days=1)
        readings, events = load_frames(
            store, lo, chunk_hi, chunk_hi + timedelta(days=DEADLINE_DAYS)
        )
        results = compute_slots(
            readings,
            events,
            chunk,
            tz=tz,
            now=now,
            rules=MeterRules(bounds, weights, freshness_rules(settings)),
            previous=previous,
            tasks=_task_frame(store, lo, chunk_hi),
        )
        del readings, events
        previous = results[-1]
        if at == 0:
            results = results[1:]  # the slot before the first: only there for its delta
        rows = [_row(res) for res in results]
        with store.transaction() as session:
            if rows:
                upsert(
                    session,
                    MeterSnapshot,
                    rows,
                    keys=("local_date", "slot"),
                    update=tuple(
                        k for k in rows[0] if k not in ("local_date", "slot", "computed_at")
                    ),
                    touch=("computed_at",),
                )
            # The state moves only with the last chunk: a run cut short starts over.
            if at + size >= len(todo):
                store.set_meta(session, STATE_KEY, new_state.dumps())
                forget_taken(session, taken)
        done += len(rows)
        if progress is not None:
            progress(done, total)
    return done


def _row(res: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "local_date": res.key.local_date,
        "slot": res.key.slot,
        "day": res.key.day,
        "timestep": res.key.timestep,
        "mapping_version": res.mapping_version,
        "provenance": dumps({m: res.meters[m].provenance for m in METERS}),
        "deltas": dumps(res.deltas),
        "computed_at": utcnow(),
    }
    for m in METERS:
        row[m] = res.meters[m].value
        row[f"{m}_confidence"] = res.meters[m].confidence
    return row
