"""iCalendar files: recurring series expanded into instances within a window.

icalendar parses, x-wr-timezone repairs Google's X-WR-TIMEZONE exports, and
recurring-ical-events expands RRULE/RDATE/EXDATE and applies moved instances
(RECURRENCE-ID). An instance's identity is its UID plus its *original* start, so a moved
instance updates in place instead of appearing twice; an instance moved by a
`RECURRENCE-ID;RANGE=THISANDFUTURE` change keeps its own original start too. An event
without a UID gets one derived from its content, so re-reading the file finds it again.
Real files are odder than RFC 5545 (../shared/fixtures/real_files/): `_repair` fixes what a
calendar app would shrug off (a property written twice, a changed instance without
DTSTART) before expansion.

Feed URLs (a private iCloud/Outlook/Google iCal link) are fetched with httpx, sending the
last ETag / Last-Modified so an unchanged feed costs one 304. A private link is a secret:
messages show only its host, and the stored calendar id is a hash of it.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from bridge.errors import InputError, RateLimited, SourceError, Transient
from connectors import ics_todos
from connectors.base import EventRecord, ReadContext, Record, ReplaceScope, Skipped, TaskScope

if TYPE_CHECKING:
    import httpx

KIND = "ics"
SOURCE = "ics"


# ---- bounded, streaming expansion --------------------------------------------------------
#
# A calendar is read in two steps so that its size and its rules cannot cost more than
# the window it is read for. First a text scan splits it into components without parsing
# them: a single event that ends before the window or starts after it is dropped there
# (a 100 k-event calendar keeps the few thousand of its window). Then the kept events
# are parsed in small batches, all of one UID in the same batch (a moved instance must
# meet its series), and each series is expanded on its own, within the window, under caps.

# Content lines continue on the next line after a CRLF (or a bare LF) and one space/tab.
_FOLD = re.compile(rb"\r?\n[ \t]")
_MARK = re.compile(rb"^(BEGIN|END):([^\r\n]*)", re.M | re.I)
_KEYS = re.compile(
    rb"^(UID|DTSTART|DTEND|DURATION|RRULE|RDATE|RECURRENCE-ID)[;:]([^\r\n]*)", re.M | re.I
)
_DATE = re.compile(rb"(?:^|:)(\d{8})")
BATCH_BYTES = 256 << 10
# A to-do block as `_scan` cut it (it ends each with CRLF), and its UID line.
_TODO_BLOCK = re.compile(rb"^BEGIN:VTODO\r?\n.*?^END:[^\r\n]*\r\n", re.M | re.S | re.I)
_TODO_UID = re.compile(rb"^UID[^:\r\n]*:([^\r\n]*)", re.M | re.I)
# Steps of a rule between its DTSTART and the window's end: a rule every minute since
# 1970 is 30 M steps of dateutil's loop before the first instance that matters.
MAX_RULE_STEPS = 200_000
# ... and for all the series of one file (a real calendar: a few hundred series, most
# weekly, some thousand steps each).
MAX_FILE_STEPS = 5_000_000
_FREQ_SECONDS = {"MINUTELY": 60, "HOURLY": 3600, "DAILY": 86_400, "WEEKLY": 604_800}
_FREQS = {"SECONDLY", "MINUTELY", "HOURLY", "DAILY", "WEEKLY", "MONTHLY", "YEARLY"}
# The largest set one period can hold, for BYSETPOS (RFC 5545 3.3.10).


@dataclass
class _Scan:
    """A calendar split into text: its own properties, time zones and events by UID."""

    props: bytes
    zones: list[bytes]
    groups: dict[bytes, list[bytes]]
    todos: list[bytes]


def _check_calendar(data: bytes, name: str) -> None:
    head = data.lstrip()[:200].lower()
    if head.startswith((b"<!doctype", b"<html")):
        raise InputError(
            f"{name}: this is an HTML page, not an iCalendar file (check the URL or login)"
        )
    if b"begin:vcalendar" not in data[:4096].lower():
        raise InputError(f"{name}: not an iCalendar file (no BEGIN:VCALENDAR)")


def _day(value: bytes) -> date | None:
    match = _DATE.search(value)
    if match is None:
        return None
    digits = match.group(1)
    try:
        return date(int(digits[:4]), int(digits[4:6]), int(digits[6:8]))
    except ValueError:
        return None


def _in_window(keys: dict[bytes, bytes], first: date, last: date) -> bool:
    """Whether a single event (no rule) may touch the window; when unsure, keep it."""
    start = _day(keys.get(b"DTSTART", b""))
    if start is None or b"DURATION" in keys:
        return True
    end = _day(keys[b"DTEND"]) if b"DTEND" in keys else start
    return end is None or (start <= last and end >= first)


def _scan(data: bytes, name: str, first: date, last: date) -> _Scan:
    text = _FOLD.sub(b"", data)
    if not re.search(rb"END:VCALENDAR\s*\Z", text[-200:], re.I):
        raise InputError(f"{name}: malformed iCalendar: it ends early (no END:VCALENDAR)")
    zones: list[bytes] = []
    groups: dict[bytes, list[bytes]] = {}
    todos: list[bytes] = []
    props: list[bytes] = []
    # Like icalendar's parser, any END closes the innermost component (real files have
    # "END:VTOOD"): only BEGIN/END lines are looked at, with a depth count.
    depth, begun, kind, outside = 0, 0, b"", 0
    for mark in _MARK.finditer(text):
        begin = mark.group(1).upper() == b"BEGIN"
        what = mark.group(2).strip().upper()
        if what == b"VCALENDAR" and depth == 0:
            props.append(text[outside : mark.start()])
            outside = mark.end()
            continue
        if what == b"VCALENDAR":  # inside a component: that component never ended
            raise InputError(
                f"{name}: malformed iCalendar: a {kind.decode(errors='replace')} has no END line"
            )
        if begin:
            if depth == 0:
                props.append(text[outside : mark.start()])
                begun, kind = mark.start(), what
            depth += 1
            continue
        if depth == 0:
            raise InputError(
                f"{name}: malformed iCalendar: END:{what.decode(errors='replace')} without BEGIN"
            )
        depth -= 1
        if depth:
            continue
        outside = mark.end()
        block = text[begun:outside] + b"\r\n"
        if kind == b"VTIMEZONE":
            zones.append(block)
        elif kind == b"VTODO":
            todos.append(block)  # a to-do list is read whole (see ics_todos)
        elif kind == b"VEVENT":
            body = block.split(b"BEGIN:VALARM", 1)[0]
            keys = {k.upper(): v for k, v in _KEYS.findall(body)}
            recurring = b"RRULE" in keys or b"RDATE" in keys or b"RECURRENCE-ID" in keys
            if not recurring and not _in_window(keys, first, last):
                continue
            uid = keys.get(b"UID") or b"\x00%d" % begun  # no UID: a group of its own
            groups.setdefault(uid, []).append(block)
    if depth:
        raise InputError(
            f"{name}: malformed iCalendar: a {kind.decode(errors='replace')} has no END line"
        )
    props.append(text[outside:])
    return _Scan(b"".join(props), zones, groups, todos)


def _batches(scan: _Scan, groups: Iterable[list[bytes]]) -> Iterator[bytes]:
    """Mini calendars of whole groups, each with the calendar's properties and zones."""
    head = b"BEGIN:VCALENDAR\r\n" + scan.props.strip() + b"\r\n" + b"".join(scan.zones)
    batch: list[bytes] = []
    size = 0
    for blocks in groups:
        batch.extend(blocks)
        size += sum(len(b) for b in blocks)
        if size >= BATCH_BYTES:
            yield head + b"".join(batch) + b"END:VCALENDAR\r\n"
            batch, size = [], 0
    if batch:
        yield head + b"".join(batch) + b"END:VCALENDAR\r\n"


def _load(data: bytes, name: str) -> Any:
    import icalendar
    import x_wr_timezone

    # icalendar warns about guesses it makes (a vendor-prefixed TZID): not the person's
    # concern, and not worth a line on every import.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cal = icalendar.Calendar.from_ical(data)
        except ValueError as err:
            raise InputError(f"{name}: malformed iCalendar: {err}") from None
        return x_wr_timezone.to_standard(cal)


def _rule_problem(comp: Any, window: tuple[datetime, datetime]) -> tuple[str, bool] | None:
    """(why, refuse) for a rule that is invalid (refuse) or not worth expanding (skip).

    `why` is empty for a rule that is fine but has no day in the window (expand nothing).
    """
    rules = comp.get("RRULE")
    if rules is None:
        return None
    uid = str(comp.get("UID", ""))[:80]
    for rule in rules if isinstance(rules, list) else [rules]:
        text = rule.to_ical().decode(errors="replace")[:120]
        freq = (rule.get("FREQ") or [""])[0]
        if freq not in _FREQS:
            return f"event {uid!r}: RRULE {text!r} has no valid FREQ; refused", True
        if freq == "SECONDLY":
            return f"event {uid!r}: RRULE {text!r} repeats every second; refused", True
        for part in ("INTERVAL", "COUNT"):
            values = rule.get(part) or [1]
            if not all(isinstance(v, int) and v >= 1 for v in values):
                return f"event {uid!r}: RRULE {text!r} has {part} below 1; refused", True
        interval = (rule.get("INTERVAL") or [1])[0]
        positions = rule.get("BYSETPOS") or []
        if positions and all(
            not isinstance(p, int) or abs(p) > _largest_set(rule, freq) for p in positions
        ):
            return f"event {uid!r}: RRULE {text!r} selects a position no period has", False
        start = comp.decoded("DTSTART") if "DTSTART" in comp else None
        if start is None:
            continue
        if not isinstance(start, datetime):
            start = datetime(start.year, start.month, start.day)
        if start.tzinfo is None:
            start = start.replace(tzinfo=UTC)
        step = _FREQ_SECONDS.get(freq)
        steps = (window[1] - start).total_seconds() / (step * interval) if step else 0
        # COUNT ends the walk too (dateutil stops after COUNT instances).
        if min(steps, (rule.get("COUNT") or [steps])[0]) > MAX_RULE_STEPS:
            return (
                f"event {uid!r}: RRULE {text!r} since {start.date()} is more than "
                f"{MAX_RULE_STEPS} steps before the window ends",
                False,
            )
        if not _some_day_matches(rule, max(start, window[0]), window[1]):
            return "", False
    return None


def _largest_set(rule: Any, freq: str) -> int:
    """The most instances one period (a day, a month...) of the rule can hold."""
    days = {"DAILY": 1, "WEEKLY": 7, "MONTHLY": 31, "YEARLY": 366}.get(freq, 1)
    if freq in ("WEEKLY", "MONTHLY") and rule.get("BYDAY") and not rule.get("BYMONTHDAY"):
        per_weekday = {"WEEKLY": 1, "MONTHLY": 5}[freq]
        days = min(days, per_weekday * len(rule["BYDAY"]))
    elif freq == "MONTHLY" and rule.get("BYMONTHDAY"):
        days = min(days, len(rule["BYMONTHDAY"]))
    finer = {"MINUTELY": ("BYSECOND",), "HOURLY": ("BYMINUTE", "BYSECOND")}.get(
        freq, ("BYHOUR", "BYMINUTE", "BYSECOND")
    )
    for part in finer:
        days *= len(rule.get(part) or []) or 1
    return days


_WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")


def _some_day_matches(rule: Any, first: datetime, last: datetime) -> bool:
    """Whether any day from `first` to `last` (a day either side) passes the date filters.

    dateutil walks a rule whose filters never match (February 30th, Monday the 31st of
    April) period by period up to the year 9999: seconds per event, and an attacker's
    feed can hold thousands. A day-by-day check of the window alone is a few dozen steps.
    Ordinals of BYDAY, INTERVAL and BYSETPOS are ignored, so this accepts a superset.
    """
    months = set(rule.get("BYMONTH") or [])
    monthdays = set(rule.get("BYMONTHDAY") or [])
    yeardays = set(rule.get("BYYEARDAY") or [])
    weeknos = set(rule.get("BYWEEKNO") or [])
    weekdays = {str(d)[-2:].upper() for d in rule.get("BYDAY") or []}
    if not (months or monthdays or yeardays or weeknos or weekdays):
        return True
    if weeknos and (rule.get("WKST") or ["MO"])[0] != "MO":
        return True  # week numbers of another week start: let dateutil decide
    day = (first - timedelta(days=1)).date()
    end = (last + timedelta(days=1)).date()
    while day <= end:
        next_month = date(day.year + day.month // 12, day.month % 12 + 1, 1)
        month_len = (next_month - date(day.year, day.month, 1)).days
        year_len = 366 if (date(day.year, 12, 31).timetuple().tm_yday == 366) else 365
        yday = day.timetuple().tm_yday
        weeks_in_year = date(day.year, 12, 28).isocalendar()[1]
        iso_year, iso_week, _ = day.isocalendar()
        if (
            (not months or day.month in months)
            and (not monthdays or day.day in monthdays or day.day - month_len - 1 in monthdays)
            and (not yeardays or yday in yeardays or yday - year_len - 1 in yeardays)
            and (
                not weeknos
                or (
                    iso_year == day.year
                    and (iso_week in weeknos or iso_week - weeks_in_year - 1 in weeknos)
                )
                or iso_year != day.year  # the edge weeks of a year: let dateutil decide
            )
            and (not weekdays or _WEEKDAYS[day.weekday()] in weekdays)
        ):
            return True
        day += timedelta(days=1)
    return False


def _count_steps(series: Any, window: tuple[datetime, datetime], cap: int) -> tuple[int, int, str]:
    """(instances dateutil walks to pass the window, how many are in the window (a day
    either side), why the series is not expanded or "").

    Counting the bare rule costs microseconds per instance; the library's expansion (an
    occurrence object and a copied component each) costs a thousand times more, and its
    rules cache every instance from DTSTART on. The walk uses dateutil's uncached
    iterator, so counting holds nothing.
    """
    from recurring_ical_events.util import convert_to_datetime

    recurrence = series.recurrence
    rules = getattr(recurrence, "rrules", [])[1:]  # [0] holds RDATEs only
    zone = getattr(recurrence, "tzinfo", None)
    low = convert_to_datetime(window[0] - timedelta(days=1), zone)
    high = convert_to_datetime(window[1] + timedelta(days=1), zone)
    if zone is None:
        low, high = low.replace(tzinfo=None), high.replace(tzinfo=None)
    steps = inside = 0
    uid = str(series.uid)[:80]
    for rule in rules:
        for when in rule._iter():
            steps += 1
            if when > high:
                break
            if when >= low:
                inside += 1
                if inside > cap:
                    return (
                        steps,
                        inside,
                        (
                            f"event {uid!r}: more than {cap} instances in the window; series "
                            "skipped (sources.ics.max_instances_per_event)"
                        ),
                    )
            if steps > MAX_RULE_STEPS:
                return (
                    steps,
                    inside,
                    (
                        f"event {uid!r}: more than {MAX_RULE_STEPS} instances before the window "
                        "ends; series skipped"
                    ),
                )
    if not rules:  # a single event, or moved instances only
        inside = 1 + len(getattr(series, "modifications", ()))
    return steps, inside, ""


def _overflows(comp: Any) -> bool:
    """An event whose end lies past the year 9999 (DTSTART plus a million weeks)."""
    try:
        if "DTSTART" in comp and "DURATION" in comp:
            comp.decoded("DTSTART") + comp.decoded("DURATION")
    except OverflowError:
        return True
    except Exception:
        return False  # unreadable otherwise: judged where it is read
    return False


@dataclass
class _Expansion:
    """One file's expansion of its recurring events, batch after batch: the window and the
    limits, what has been spent so far, and the series found unreadable."""

    name: str
    window: tuple[datetime, datetime]
    ctx: ReadContext
    steps: int = 0  # dateutil steps walked
    instances: int = 0  # instances counted
    broken: set[str] = field(default_factory=set)  # UIDs listed but unreadable: not
    # cancelled for being absent


def _occurrences(cal: Any, exp: _Expansion, skipped: list[Skipped]) -> Iterator[Any]:
    """Each series' instances in the window, a series over its cap skipped as a whole."""
    _limit_rules(cal, exp, skipped)
    counted = _counted(_series(cal, skipped, exp.broken), exp, skipped)
    # Popped one by one: a series' rules cache their instances, freed with the series.
    while counted:
        series = counted.pop()
        try:
            occurrences = list(series.between(*exp.window))
        except OverflowError:  # an end in the year 9999, a duration of a million weeks
            skipped.append(Skipped("event", f"event {str(series.uid)[:80]!r}: date out of range"))
            continue
        except Exception as err:
            exp.broken.add(str(series.uid))
            skipped.append(Skipped("event", _unreadable(series, err)))
            continue
        single = not _repeats(series)
        for occurrence in occurrences:
            comp = occurrence.as_component(False)
            if single and "X-RB-SERIES" not in comp:
                # The library gives every instance a RECURRENCE-ID, a lone event's too; a
                # lone event has none ("" in the store), and is not read as a series'.
                comp.pop("RECURRENCE-ID", None)
            yield comp


def _repeats(series: Any) -> bool:
    """Whether a series is more than one event as written: a rule, extra dates, or an
    instance written apart from its rule."""
    return any(c.rrules or c.rdates or c.is_modification() for c in series.components)


def _limit_rules(cal: Any, exp: _Expansion, skipped: list[Skipped]) -> None:
    """Drop events out of range and cut the rules that cannot be expanded to their first
    instance (InputError for a rule that refuses the file), in place."""
    for comp in cal.walk("VEVENT"):
        if _overflows(comp):
            uid = str(comp.get("UID", ""))[:80]
            skipped.append(Skipped("event", f"event {uid!r}: date out of range"))
            cal.subcomponents.remove(comp)
            continue
        try:
            problem = _rule_problem(comp, exp.window)
        except Exception as err:  # icalendar raises its own types for broken values
            uid = str(comp.get("UID", ""))[:80]
            raise InputError(f"{exp.name}: event {uid!r} has an unreadable RRULE ({err})") from None
        if problem is None:
            continue
        why, refuse = problem
        if refuse:
            raise InputError(f"{exp.name}: {why}")
        if why:
            skipped.append(Skipped("event", why))
        # Its first instance stays (DTSTART is always one), still marked as a series'.
        comp.pop("RRULE")
        comp.add("X-RB-SERIES", "1")


def _counted(all_series: list[Any], exp: _Expansion, skipped: list[Skipped]) -> list[Any]:
    """The series within their cap, counted against the file's budget (emptying
    `all_series`)."""
    # Counted first, all of the batch: a file over its cap is refused before the slow
    # expansion (about a millisecond per instance) starts.
    ctx, counted = exp.ctx, []
    for series in all_series:
        try:
            steps, inside, why = _count_steps(series, exp.window, ctx.max_instances_per_event)
        except OverflowError:
            steps, inside, why = 0, 0, f"event {str(series.uid)[:80]!r}: date out of range"
        except Exception as err:  # one broken series (an unreadable EXDATE) costs itself
            exp.broken.add(str(series.uid))
            steps, inside, why = 0, 0, _unreadable(series, err)
        exp.steps += steps
        if exp.steps > MAX_FILE_STEPS:
            raise InputError(
                f"{exp.name}: its recurring events need more than {MAX_FILE_STEPS} steps to "
                "expand; refused"
            )
        if why:
            skipped.append(Skipped("event", why))
            continue
        exp.instances += inside
        if exp.instances > ctx.max_instances_per_file:
            raise InputError(
                f"{exp.name}: more than {ctx.max_instances_per_file} event instances in the "
                "window; refused (sources.ics.max_instances_per_file)"
            )
        counted.append(series)
    all_series.clear()
    return counted


# Properties RFC 5545 allows once per VEVENT; some writers repeat them (the first wins,
# as in the calendar apps that wrote them).
_SINGLE = ("UID", "DTSTART", "DTEND", "DURATION", "RECURRENCE-ID", "SUMMARY", "STATUS", "TRANSP")
# What identifies an event that has no UID: its content, not when the file was written.
_CONTENT = ("DTSTART", "DTEND", "DURATION", "RRULE", "RDATE", "SUMMARY", "LOCATION", "DESCRIPTION")


def _content_uid(comp: Any) -> str:
    parts = []
    for prop in _CONTENT:
        value = comp.get(prop)
        for item in value if isinstance(value, list) else [value]:
            parts.append(f"{prop}:{item.to_ical().decode() if hasattr(item, 'to_ical') else item}")
    return "nouid-" + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


def _repair(cal: Any) -> list[str]:
    """Make odd but legitimate events expandable, in place; return why others were dropped."""
    dropped: list[str] = []
    for comp in list(cal.subcomponents):
        if comp.name != "VEVENT":
            continue
        for prop in _SINGLE:
            if isinstance(comp.get(prop), list):
                values = comp[prop]
                del comp[prop]
                comp.add(prop, values[0], encode=False)
        if "DTSTART" not in comp:
            if "RECURRENCE-ID" not in comp:
                cal.subcomponents.remove(comp)
                dropped.append(f"{comp.get('UID', 'an event')}: no DTSTART")
                continue
            # A changed instance that does not say when it starts keeps its original start.
            comp.add("DTSTART", comp["RECURRENCE-ID"], encode=False)
        if not str(comp.get("UID", "")).strip():
            comp.pop("UID", None)
            comp.add("UID", _content_uid(comp))
    return dropped


def _future_shifts(cal: Any) -> dict[tuple[str, str], timedelta]:
    """(UID, RECURRENCE-ID) of each RANGE=THISANDFUTURE change -> how far it moved the
    instances after it; undoing that shift gives an instance's original start."""
    shifts: dict[tuple[str, str], timedelta] = {}
    for comp in cal.walk("VEVENT"):
        rid = comp.get("RECURRENCE-ID")
        if rid is None or str(rid.params.get("RANGE", "")).upper() != "THISANDFUTURE":
            continue
        try:
            start, original = comp.decoded("DTSTART"), comp.decoded("RECURRENCE-ID")
            shift = _naive_utc(start) - _naive_utc(original)
        except (TypeError, ValueError, KeyError, AttributeError):
            continue
        shifts[(str(comp.get("UID")), rid.to_ical().decode())] = shift
    return shifts


def _naive_utc(value: date | datetime) -> datetime:
    if not isinstance(value, datetime):
        return datetime(value.year, value.month, value.day)
    if value.tzinfo is None:
        return value
    return value.astimezone(UTC).replace(tzinfo=None)


def _original_start(comp: Any, shifts: dict[tuple[str, str], timedelta]) -> date | datetime:
    """The start an instance had before any change: its RECURRENCE-ID, unless that names
    a THISANDFUTURE change, which moved this instance along with every later one."""
    if "RECURRENCE-ID" not in comp:
        return comp.decoded("DTSTART")
    rid = comp["RECURRENCE-ID"]
    original = comp.decoded("RECURRENCE-ID")
    shift = shifts.get((str(comp.get("UID")), rid.to_ical().decode()))
    if shift is None:
        return original
    start = comp.decoded("DTSTART")
    if isinstance(start, datetime) and isinstance(original, datetime):
        return start.astimezone(original.tzinfo) - shift if original.tzinfo else start - shift
    if not isinstance(start, datetime) and not isinstance(original, datetime):
        return start - shift
    return original


def _series(cal: Any, skipped: list[Skipped], broken: set[str]) -> list[Any]:
    """The batch's series; when the library cannot build them all (one unreadable EXDATE
    fails the whole calendar), again one UID at a time, so a broken series costs itself."""
    import icalendar
    import recurring_ical_events

    try:
        return list(recurring_ical_events.of(cal).series)
    except Exception:  # the library raises many types for broken values
        pass
    zones = [c for c in cal.subcomponents if c.name == "VTIMEZONE"]
    by_uid: dict[str, list[Any]] = {}
    for comp in cal.subcomponents:
        if comp.name == "VEVENT":
            by_uid.setdefault(str(comp.get("UID", "")), []).append(comp)
    found: list[Any] = []
    for uid, comps in by_uid.items():
        one = icalendar.Calendar()
        one.subcomponents.extend([*zones, *comps])
        try:
            found.extend(recurring_ical_events.of(one).series)
        except Exception as err:
            broken.add(uid)
            why = f"event {uid[:80]!r}: cannot expand it ({err})".splitlines()[0][:300]
            skipped.append(Skipped("event", why))
    return found


def _unreadable(series: Any, err: Exception) -> str:
    text = f"event {str(series.uid)[:80]!r}: cannot expand it ({err})"
    return text.splitlines()[0][:300] if text else text


def records_from_bytes(
    data: bytes, calendar_id: str, ctx: ReadContext, name: str
) -> Iterator[Record]:
    """The instances of a calendar in ctx's window, then the scope they replace."""
    _check_calendar(data, name)
    window_start = (ctx.now - timedelta(days=ctx.past_days)).astimezone(UTC)
    window_end = (ctx.now + timedelta(days=ctx.future_days)).astimezone(UTC)
    # A day either side for zones (the scan compares the dates as written).
    scan = _scan(
        data,
        name,
        (window_start - timedelta(days=1)).date(),
        (window_end + timedelta(days=1)).date(),
    )
    del data
    exp = _Expansion(name, (window_start, window_end), ctx)
    broken = exp.broken
    for batch in _batches(scan, scan.groups.values()):
        cal = _load(batch, name)
        skipped = [Skipped("event", why) for why in _repair(cal)]
        shifts = _future_shifts(cal)
        for comp in _occurrences(cal, exp, skipped):
            if "DTSTART" not in comp:
                continue
            try:
                yield _event(comp, calendar_id, ctx, shifts)
            except (ValueError, TypeError, KeyError, OverflowError, AttributeError) as err:
                broken.add(str(comp.get("UID", "")))
                yield Skipped("event", f"unreadable event: {err}")
        yield from skipped
    # To-dos live beside the events (same file, same id as their list); see ics_todos.
    keep: set[str] = set()
    for batch in _batches(scan, ([todo] for todo in scan.todos)):
        try:
            cals = [_load(batch, name)]
        except InputError:
            # One to-do icalendar refuses (PRIORITY:high) must not cost the file: read
            # this batch's to-dos one by one and count the ones that fail.
            cals = []
            for todo in _TODO_BLOCK.findall(batch):
                try:
                    cals.append(_load(next(_batches(scan, [[todo]])), name))
                except InputError as err:
                    uid = _TODO_UID.search(todo)
                    if uid:
                        keep.add(uid.group(1).decode("utf-8", "replace").strip())
                    yield Skipped("task", str(err).rsplit(": ", 1)[-1][:300])
        for cal in cals:
            for rec in ics_todos.records(cal, calendar_id, ctx):
                if isinstance(rec, TaskScope):
                    keep |= rec.keep
                else:
                    yield rec
    yield TaskScope(calendar_id, frozenset(keep))
    yield ReplaceScope(
        calendar_id, window_start, window_end, frozenset((uid, None) for uid in broken)
    )


def _event(
    comp: Any,
    calendar_id: str,
    ctx: ReadContext,
    shifts: dict[tuple[str, str], timedelta] | None = None,
) -> EventRecord:
    start, all_day = _aware(comp.decoded("DTSTART"), ctx)
    if "DTEND" in comp:
        end, _ = _aware(comp.decoded("DTEND"), ctx)
    elif "DURATION" in comp:
        end = start + comp.decoded("DURATION")
    else:
        end = start + (timedelta(days=1) if all_day else timedelta(0))
    recurring = (
        "RRULE" in comp or "RDATE" in comp or "RECURRENCE-ID" in comp or "X-RB-SERIES" in comp
    )
    original = _original_start(comp, shifts or {})
    attendees = comp.get("ATTENDEE", [])
    if not isinstance(attendees, list):
        attendees = [attendees]
    return EventRecord(
        calendar_id=calendar_id,
        uid=str(comp.get("UID", "")) or _content_uid(comp),
        recurrence_id=_stamp(original, ctx) if recurring else "",
        title=str(comp.get("SUMMARY", "")).strip(),
        start=start,
        end=max(end, start),
        all_day=all_day,
        status=str(comp.get("STATUS", "CONFIRMED")).lower(),
        transparency="transparent"
        if str(comp.get("TRANSP", "")).upper() == "TRANSPARENT"
        else "opaque",
        # Outlook and Exchange mark a day off this way; Google's own field is eventType.
        event_type="outOfOffice"
        if str(comp.get("X-MICROSOFT-CDO-BUSYSTATUS", "")).upper() == "OOF"
        else "default",
        attendee_count=len(attendees),
        # ORGANIZER names an address; a plain file does not say which address is the
        # person's, so organized_by_me stays False.
        location=" ".join(str(comp.get("LOCATION", "")).split()),
    )


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


def read(path: Path, ctx: ReadContext) -> Iterator[Record]:
    """Events of one .ics file; the file's absolute path is its calendar id."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror or err}") from None
    return records_from_bytes(data, str(path.resolve()), ctx, str(path))


# ---- feed URLs ---------------------------------------------------------------------------

MAX_FEED_BYTES = 32 << 20  # a decade of a busy calendar is a few MB
FEED_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class Feed:
    """One fetch of a feed: its body (None when unchanged) and the validators to send next."""

    body: bytes | None
    etag: str = ""
    last_modified: str = ""


def feed_url(url: str) -> str:
    """webcal:// is how calendar apps spell https:// for subscriptions."""
    return "https://" + url[len("webcal://") :] if url.lower().startswith("webcal://") else url


def redact(url: str) -> str:
    """A feed URL safe for logs and messages: private links carry a secret in the path."""
    parts = urlsplit(feed_url(url))
    return f"{parts.scheme}://{parts.hostname or ''}/…" if parts.path not in ("", "/") else url


def feed_id(url: str) -> str:
    """A stable calendar id for a feed that does not store its secret path."""
    digest = hashlib.sha256(feed_url(url).encode()).hexdigest()[:16]
    return f"feed:{urlsplit(feed_url(url)).hostname or ''}:{digest}"


def fetch_feed(
    url: str,
    *,
    etag: str = "",
    last_modified: str = "",
    client: httpx.Client | None = None,
) -> Feed:
    """GET a feed with If-None-Match / If-Modified-Since; a 304 gives Feed(body=None)."""
    import httpx

    headers = {"Accept": "text/calendar, */*;q=0.5", "User-Agent": "rhythm-bridge"}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    from connectors.http import new_client

    shown = redact(url)
    own = client is None
    client = client or new_client(FEED_TIMEOUT, follow_redirects=True)
    try:
        with client.stream("GET", feed_url(url), headers=headers) as resp:
            if resp.status_code == 304:
                return Feed(None, etag, last_modified)
            _check_status(resp, shown)
            body = bytearray()
            for chunk in resp.iter_bytes():
                body += chunk
                if len(body) > MAX_FEED_BYTES:
                    raise InputError(
                        f"{shown}: feed is larger than {MAX_FEED_BYTES >> 20} MB; not a calendar?"
                    )
            return Feed(
                bytes(body),
                resp.headers.get("ETag", ""),
                resp.headers.get("Last-Modified", ""),
            )
    except httpx.TimeoutException:
        raise Transient(f"{shown}: timed out; will retry") from None
    except httpx.HTTPError as err:
        raise Transient(f"{shown}: network error ({type(err).__name__}); will retry") from None
    finally:
        if own:
            client.close()


def _check_status(resp: httpx.Response, shown: str) -> None:
    status = resp.status_code
    if status < 300:
        return
    if status == 429:
        retry = resp.headers.get("Retry-After", "")
        raise RateLimited(
            f"{shown}: rate limited (HTTP 429)", float(retry) if retry.isdigit() else None
        )
    if status in (401, 403, 404, 410):
        raise SourceError(
            f"{shown}: HTTP {status}; the calendar link was revoked or is wrong — "
            "copy a fresh one into sources.ics.urls"
        )
    if status >= 500:
        raise Transient(f"{shown}: server error HTTP {status}; will retry")
    raise SourceError(f"{shown}: unexpected HTTP {status}")
