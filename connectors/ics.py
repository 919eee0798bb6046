"""iCalendar files: recurring series expanded into instances within a window.

icalendar parses, x-wr-timezone repairs Google's X-WR-TIMEZONE exports, and
recurring-ical-events expands RRULE/RDATE/EXDATE and applies moved instances
(RECURRENCE-ID). An instance's identity is its UID plus its *original* start, so a moved
instance updates in place instead of appearing twice; an instance moved by a
`RECURRENCE-ID;RANGE=THISANDFUTURE` change keeps its own original start too. An event
without a UID gets one derived from its content, so re-reading the file finds it again.

Real files are odder than RFC 5545 (see tests/fixtures/real/): `_repair` fixes what a
calendar app would shrug off before expansion (a property written twice, a changed
instance without DTSTART), and a series that still cannot be expanded is skipped with a
reason instead of costing the rest of the file.

Feed URLs (a private iCloud/Outlook/Google iCal link) are fetched with httpx, sending the
last ETag / Last-Modified so an unchanged feed costs one 304. A private link is a secret:
messages show only its host, and the stored calendar id is a hash of it.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from bridge.errors import InputError, RateLimited, SourceError, Transient
from connectors import ics_todos
from connectors.base import EventRecord, ReadContext, Record, ReplaceScope, Skipped

if TYPE_CHECKING:
    import httpx

KIND = "ics"
SOURCE = "ics"
PROVIDES = frozenset({"calendar", "tasks"})


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


def _expand(
    cal: Any, start: datetime, end: datetime, name: str
) -> tuple[list[Any], list[Skipped], set[str]]:
    """The window's instances; an event that cannot be expanded is skipped, not fatal."""
    import icalendar
    import recurring_ical_events

    try:
        return recurring_ical_events.of(cal).between(start, end), [], set()
    except Exception:  # the library raises many types for broken rules: find the culprit
        pass
    # Again one UID at a time (with every time zone), so one broken series costs itself.
    zones = [c for c in cal.subcomponents if c.name == "VTIMEZONE"]
    by_uid: dict[str, list[Any]] = {}
    for comp in cal.subcomponents:
        if comp.name == "VEVENT":
            by_uid.setdefault(str(comp.get("UID", "")), []).append(comp)
    instances: list[Any] = []
    skipped: list[Skipped] = []
    broken: set[str] = set()
    for uid, comps in by_uid.items():
        one = icalendar.Calendar()
        one.subcomponents.extend([*zones, *comps])
        try:
            instances.extend(recurring_ical_events.of(one).between(start, end))
        except Exception as err:
            broken.add(uid)
            reason = f"cannot expand event {uid[:80]}: {err}".splitlines()[0][:300]
            skipped.append(Skipped("event", reason))
    return instances, skipped, broken


def _event(
    comp: Any, calendar_id: str, ctx: ReadContext, shifts: dict[tuple[str, str], timedelta]
) -> EventRecord:
    start, all_day = _aware(comp.decoded("DTSTART"), ctx)
    if "DTEND" in comp:
        end, _ = _aware(comp.decoded("DTEND"), ctx)
    elif "DURATION" in comp:
        end = start + comp.decoded("DURATION")
    else:
        end = start + (timedelta(days=1) if all_day else timedelta(0))
    recurring = "RRULE" in comp or "RDATE" in comp or "RECURRENCE-ID" in comp
    attendees = comp.get("ATTENDEE", [])
    if not isinstance(attendees, list):
        attendees = [attendees]
    return EventRecord(
        calendar_id=calendar_id,
        uid=str(comp.get("UID", "")),
        recurrence_id=_stamp(_original_start(comp, shifts), ctx) if recurring else "",
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
    )


def records_from_bytes(
    data: bytes, calendar_id: str, ctx: ReadContext, name: str
) -> Iterator[Record]:
    """The instances of a calendar in ctx's window, then the scope they replace."""
    window_start = (ctx.now - timedelta(days=ctx.past_days)).astimezone(UTC)
    window_end = (ctx.now + timedelta(days=ctx.future_days)).astimezone(UTC)
    out: list[Record] = []
    # icalendar warns about guesses it makes (a vendor-prefixed TZID): not the person's
    # concern, and not worth a line on every import.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = _load(data, name)
        out.extend(Skipped("event", reason) for reason in _repair(cal))
        shifts = _future_shifts(cal)
        instances, skipped, broken = _expand(cal, window_start, window_end, name)
        out.extend(skipped)
        for comp in instances:
            if "DTSTART" not in comp:
                continue
            try:
                out.append(_event(comp, calendar_id, ctx, shifts))
            except Exception as err:  # a value icalendar cannot decode: this event only
                reason = f"cannot read event {str(comp.get('UID', ''))[:80]}: {err}"
                out.append(Skipped("event", reason.splitlines()[0][:300]))
                broken.add(str(comp.get("UID", "")))
        # To-dos live beside the events (same file, same id as their list); see ics_todos.
        out.extend(ics_todos.records(cal, calendar_id, ctx))
    yield from out
    keep = frozenset((uid, None) for uid in broken)
    yield ReplaceScope(calendar_id, window_start, window_end, keep)


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
    shown = redact(url)
    own = client is None
    client = client or httpx.Client(timeout=FEED_TIMEOUT, follow_redirects=True)
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
