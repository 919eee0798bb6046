"""Plausibility checks every connector's records pass before they are stored.

A record outside what a human body or a calendar can produce (HRV of -5 ms, 10^12 steps,
a night in 1900) is skipped with a reason, never stored and never fatal: one bad record
must not cost the person the rest of their export.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, tzinfo

from bridge.errors import printable
from connectors.base import EventRecord, ReadingRecord, TaskRecord

# metric -> (lowest, highest) plausible value of ONE record. Every metric a source declares
# in connectors/registry.py has one (tests/connectors/test_registry.py).
RANGES: dict[str, tuple[float, float]] = {
    "steps": (0, 100_000),
    "heart_rate": (20, 250),
    "resting_hr": (25, 150),
    "hrv_sdnn": (1, 500),
    "hrv_rmssd": (1, 500),
    "respiratory_rate": (4, 60),
    "active_energy": (0, 10_000),
    "stress": (0, 100),
    "recovery": (0, 100),
    "body_battery": (0, 100),
    "sleep": (0, 24 * 60),
    "mindful": (0, 12 * 60),
    "workout": (0, 24 * 60),
    "restoration": (0, 25),  # the restoration part of Fitbit's sleep score
    "sleep_score": (0, 100),  # WHOOP's sleep performance, Garmin's and Fitbit's score
    "stress_score": (0, 100),  # Fitbit's stress management score (high = calm)
    "readiness_score": (0, 100),  # Fitbit's daily readiness
    "active_minutes": (0, 24 * 60),  # a day's minutes at one activity level
    "journal": (0, 1),  # a WHOOP journal answer: 1 yes, 0 no (stored only when turned on)
    "workout_energy": (0, 10_000),  # kcal of one workout, like a day's active energy
    # km of one workout: a 24-hour cycling record is under 1,000 km
    "workout_distance": (0, 1_000),
}
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
# Calendars write local times: 2000-01-01 00:00 anywhere on Earth (UTC+14 at most).
EARLIEST_EVENT = EARLIEST - timedelta(hours=14)
# Devices sync late and clocks drift; anything further ahead than this is not a reading.
FUTURE_SLACK = timedelta(days=2)
# One event or measurement spanning longer than this is a data error (multi-day trips are
# all-day events, which are allowed up to a year).
MAX_READING_SPAN = timedelta(days=2)
MAX_EVENT_SPAN = timedelta(days=366)


# Column sizes of the text fields (bridge/store/models.py; a test keeps them equal). Longer
# text is clipped here: PostgreSQL refuses it, SQLite would store 20 MB of device name.
READING_TEXT = {"metric": 48, "origin": 200, "unit": 32, "label": 64, "device": 300}
EVENT_TEXT = {
    "calendar_id": 300,
    "uid": 300,
    "recurrence_id": 64,
    "status": 16,
    "transparency": 16,
    "event_type": 32,
    "self_response": 16,
    "location": 300,
}
MAX_TITLE = 1000


def _clip(rec: object, limits: dict[str, int]) -> None:
    """Clip text fields to their columns, without control characters (see printable)."""
    for name, limit in limits.items():
        value = getattr(rec, name)
        if not value.isprintable():
            value = printable(value)
            setattr(rec, name, value)
        if len(value) > limit:
            setattr(rec, name, value[:limit])


def needs_cleaning(rec: ReadingRecord) -> bool:
    """True when a reading's text holds control characters or is longer than its column."""
    return (
        len(rec.origin) > 200
        or len(rec.device) > 300
        or len(rec.label) > 64
        or len(rec.unit) > 32
        or len(rec.metric) > 48
        or not rec.origin.isprintable()
        or not rec.device.isprintable()
        or not rec.label.isprintable()
        or not rec.unit.isprintable()
    )


def check_reading(rec: ReadingRecord, now: datetime) -> str | None:
    """Why this reading cannot be stored, or None when it is plausible (text clipped).

    Runs once per record of multi-GB exports, so the common case is a handful of
    comparisons and no calls.
    """
    if needs_cleaning(rec):
        _clip(rec, READING_TEXT)
    start, end = rec.start, rec.end
    tz = start.tzinfo
    if tz is None or end.tzinfo is None:
        return _check_span(start, end, now, MAX_READING_SPAN)
    bounds = _bounds_cache.get(tz)
    if bounds is None or bounds[2] is not now:
        bounds = _bounds(tz, now)
    lo, hi = bounds[0], bounds[1]
    if end < start or start < lo or start > hi or end - start > MAX_READING_SPAN:
        return _check_span(start, end, now, MAX_READING_SPAN)
    value = rec.value
    if value is not None:
        if not math.isfinite(value):
            return f"{rec.metric} value {value} is not a number"
        plausible = RANGES.get(rec.metric)
        if plausible and not plausible[0] <= value <= plausible[1]:
            return f"{rec.metric} value {value:g} outside {plausible[0]:g}..{plausible[1]:g}"
    return None


_bounds_cache: dict[tzinfo, tuple[datetime, datetime, datetime]] = {}


def _bounds(tz: tzinfo, now: datetime) -> tuple[datetime, datetime, datetime]:
    """EARLIEST and now + FUTURE_SLACK expressed in `tz`, cached per zone and `now`.

    Comparing datetimes of different zones costs ~15x more than of the same zone object,
    and readers reuse one zone object per offset. Same-zone comparison is by wall time,
    which can be an hour off around a DST change: nothing for these bounds.
    """
    cached = _bounds_cache.get(tz)
    if cached is None or cached[2] is not now:
        if len(_bounds_cache) > 1000:
            _bounds_cache.clear()
        cached = (EARLIEST.astimezone(tz), (now + FUTURE_SLACK).astimezone(tz), now)
        _bounds_cache[tz] = cached
    return cached


def check_event(rec: EventRecord, now: datetime) -> str | None:
    """Why this event cannot be stored, or None when it is plausible (text clipped)."""
    _clip(rec, {**EVENT_TEXT, "title": MAX_TITLE})
    return _check_span(
        rec.start,
        rec.end,
        now,
        MAX_EVENT_SPAN,
        future=timedelta(days=3660),
        earliest=EARLIEST_EVENT,
    )


def _check_span(
    start: datetime,
    end: datetime,
    now: datetime,
    longest: timedelta,
    *,
    future: timedelta = FUTURE_SLACK,
    earliest: datetime = EARLIEST,
) -> str | None:
    if start.tzinfo is None or end.tzinfo is None:
        return "time without a UTC offset"
    if end < start:
        return f"ends ({end.isoformat()}) before it starts ({start.isoformat()})"
    if start < earliest:
        return f"starts in {start.year}, before {EARLIEST.year}"
    if start > now + future:
        return f"starts in the future ({start.isoformat()})"
    if end - start > longest:
        return f"spans {end - start}, longer than {longest}"
    return None


TASK_TEXT = {"list_id": 300, "uid": 300, "status": 16, "parent": 300}
# A due date this far ahead is a typo or a placeholder (year 9999), not a plan.
TASK_DUE_AHEAD = timedelta(days=3660)
TASK_EARLIEST = datetime(1990, 1, 1, tzinfo=UTC)


def check_task(rec: TaskRecord, now: datetime) -> str | None:
    """Why this task cannot be stored, or None when it is plausible (text clipped)."""
    if not rec.uid:
        return "no UID (a to-do without one cannot be told apart from the next import's)"
    _clip(rec, {**TASK_TEXT, "title": MAX_TITLE})
    for name in ("due", "created", "completed"):
        value = getattr(rec, name)
        if value is None:
            continue
        if value.tzinfo is None:
            return f"{name} {value.isoformat()} has no UTC offset"
        if value < TASK_EARLIEST:
            return f"{name} in {value.year}, before {TASK_EARLIEST.year}"
        ahead = TASK_DUE_AHEAD if name == "due" else FUTURE_SLACK
        if value > now + ahead:
            return f"{name} {value.date().isoformat()} is implausibly far in the future"
    if rec.percent is not None and not 0 <= rec.percent <= 100:
        rec.percent = max(0, min(100, rec.percent))
    return None
