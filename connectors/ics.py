"""iCalendar files: recurring series expanded into instances within a window.

icalendar parses, x-wr-timezone repairs Google's X-WR-TIMEZONE exports, and
recurring-ical-events expands RRULE/RDATE/EXDATE and applies moved instances
(RECURRENCE-ID). An instance's identity is its UID plus its *original* start, so a moved
instance updates in place instead of appearing twice.

Feed URLs (a private iCloud/Outlook/Google iCal link) are fetched with httpx, sending the
last ETag / Last-Modified so an unchanged feed costs one 304. A private link is a secret:
messages show only its host, and the stored calendar id is a hash of it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from bridge.errors import InputError, RateLimited, SourceError, Transient
from connectors import ics_todos
from connectors.base import EventRecord, ReadContext, Record, ReplaceScope

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


def records_from_bytes(
    data: bytes, calendar_id: str, ctx: ReadContext, name: str
) -> Iterator[Record]:
    """The instances of a calendar in ctx's window, then the scope they replace."""
    import recurring_ical_events

    # To-dos are cut out and parsed one by one (see ics_todos: a 100k-task feed).
    data, todo_blocks = ics_todos.split(data)
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
            # Outlook and Exchange mark a day off this way; Google's own field is eventType.
            event_type="outOfOffice"
            if str(comp.get("X-MICROSOFT-CDO-BUSYSTATUS", "")).upper() == "OOF"
            else "default",
            attendee_count=len(attendees),
        )
    # To-dos live beside the events (same file, same id as their list); see ics_todos.
    yield from ics_todos.records(cal, calendar_id, ctx, todo_blocks)
    yield ReplaceScope(calendar_id, window_start, window_end)


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
