"""iCalendar files: recurring series expanded into instances within a window.

icalendar parses, x-wr-timezone repairs Google's X-WR-TIMEZONE exports, and
recurring-ical-events expands RRULE/RDATE/EXDATE and applies moved instances
(RECURRENCE-ID). An instance's identity is its UID plus its *original* start, so a moved
instance updates in place instead of appearing twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from bridge.errors import InputError
from connectors.base import EventRecord, ReadContext, ReplaceScope

KIND = "ics"
SOURCE = "ics"
PROVIDES = frozenset({"calendar"})


def _load(data: bytes, name: str) -> Any:
    import icalendar
    import x_wr_timezone

    head = data.lstrip()[:200].lower()
    if head.startswith((b"<!doctype", b"<html")):
        raise InputError(
            f"{name}: this is an HTML page, not an iCalendar file (check the URL or login)"
        )
    if b"begin:vcalendar" not in data[:4096].lower():
        raise InputError(f"{name}: not an iCalendar file (no BEGIN:VCALENDAR)")
    try:
        cal = icalendar.Calendar.from_ical(data)
    except ValueError as err:
        raise InputError(f"{name}: malformed iCalendar: {err}") from None
    return x_wr_timezone.to_standard(cal)


def _aware(value: date | datetime, ctx: ReadContext) -> tuple[datetime, bool]:
    """An event time as an aware datetime; dates are all-day, floating times are local."""
    if not isinstance(value, datetime):
        return datetime(value.year, value.month, value.day, tzinfo=ctx.tz), True
    if value.tzinfo is None:
        return value.replace(tzinfo=ctx.tz), False
    return value, False


def _stamp(value: date | datetime, ctx: ReadContext) -> str:
    when, all_day = _aware(value, ctx)
    return when.strftime("%Y%m%d") if all_day else when.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def records_from_bytes(
    data: bytes, calendar_id: str, ctx: ReadContext, name: str
) -> Iterator[EventRecord | ReplaceScope]:
    """The instances of a calendar in ctx's window, then the scope they replace."""
    import recurring_ical_events

    cal = _load(data, name)
    window_start = (ctx.now - timedelta(days=ctx.past_days)).astimezone(UTC)
    window_end = (ctx.now + timedelta(days=ctx.future_days)).astimezone(UTC)
    try:
        instances = recurring_ical_events.of(cal).between(window_start, window_end)
    except Exception as err:  # the library raises many types for broken rules
        raise InputError(f"{name}: cannot expand recurring events: {err}") from None
    for comp in instances:
        if "DTSTART" not in comp:
            continue
        start, all_day = _aware(comp.decoded("DTSTART"), ctx)
        if "DTEND" in comp:
            end, _ = _aware(comp.decoded("DTEND"), ctx)
        elif "DURATION" in comp:
            end = start + comp.decoded("DURATION")
        else:
            end = start + (timedelta(days=1) if all_day else timedelta(0))
        recurring = "RRULE" in comp or "RDATE" in comp or "RECURRENCE-ID" in comp
        original = (
            comp.decoded("RECURRENCE-ID") if "RECURRENCE-ID" in comp else comp.decoded("DTSTART")
        )
        attendees = comp.get("ATTENDEE", [])
        if not isinstance(attendees, list):
            attendees = [attendees]
        yield EventRecord(
            calendar_id=calendar_id,
            uid=str(comp.get("UID", "")) or f"nouid-{_stamp(comp.decoded('DTSTART'), ctx)}",
            recurrence_id=_stamp(original, ctx) if recurring else "",
            title=str(comp.get("SUMMARY", "")).strip(),
            start=start,
            end=max(end, start),
            all_day=all_day,
            status=str(comp.get("STATUS", "CONFIRMED")).lower(),
            transparency="transparent"
            if str(comp.get("TRANSP", "")).upper() == "TRANSPARENT"
            else "opaque",
            attendee_count=len(attendees),
        )
    yield ReplaceScope(calendar_id, window_start, window_end)


def read(path: Path, ctx: ReadContext) -> Iterator[EventRecord | ReplaceScope]:
    """Events of one .ics file; the file's absolute path is its calendar id."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror or err}") from None
    return records_from_bytes(data, str(path.resolve()), ctx, str(path))
