"""Google Calendar API v3: several calendars, incremental sync with syncToken.

The first pull of a calendar lists it from `timeMin` with recurring series expanded into
instances (`singleEvents=True`) and keeps the `nextSyncToken` of the last page; later
pulls send only that token and get changes, deletions included. A 410 means the token is
stale: list everything again, and whatever the fresh list lacks is marked cancelled.
An instance is keyed by its series id and original start, so a moved instance updates
its row and a cancelled one (which carries only those ids) finds it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bridge.auth.secrets import Secrets, quiet_secret_loggers
from bridge.config import Settings
from bridge.errors import (
    AuthExpired,
    CursorInvalid,
    NotConnected,
    RateLimited,
    SourceError,
    Transient,
)
from connectors.base import EventRecord, ReadContext, ReplaceScope, Skipped
from connectors.http import (
    MAX_RESPONSE_BYTES,
    RETRY_NEXT_SYNC,
    RetryableError,
    RetryPolicy,
    retry_after_seconds,
    spend,
    too_big,
    unreadable,
    with_retries,
)
from connectors.live import (
    MALFORMED,
    Cancellation,
    Cursors,
    Progress,
    PullResult,
    iso_z,
    no_progress,
    normalize,
    page_items,
    parse_instant,
)
from connectors.registry import auth_command

quiet_secret_loggers()

log = logging.getLogger("rhythm_bridge.google_calendar")

SOURCE = "google_calendar"
SCOPES = ("https://www.googleapis.com/auth/calendar.readonly",)
TOKEN_SECRET = "google_calendar:token"
# The opt-in write-back (bridge.out.google_write) has its own consent and token, so the
# sync keeps a read-only token and revoking one leaves the other.
WRITE_SCOPE = "https://www.googleapis.com/auth/calendar.events"
WRITE_TOKEN_SECRET = "google_calendar:write_token"
# Events rhythm-bridge wrote carry this key in extendedProperties.private; the sync skips
# them, so a suggestion written into the calendar is never read back as the person's plan.
OWN_EVENT_KEY = "rhythmBridge"
STREAM = "events"
PAGE_SIZE = 2500  # the API's maximum
# A replace scope for a full resync covers every stored start from timeMin on.
_FAR_FUTURE = datetime(2200, 1, 1, tzinfo=UTC)
TESTING_HINT = (
    "if this happens every 7 days, the OAuth consent screen is in 'Testing': "
    "publish it 'In production' in the Google Cloud console, then re-run the auth command"
)


# --- credentials and transport ----------------------------------------------------------


def load_credentials(settings: Settings, secrets: Secrets, token_secret: str = TOKEN_SECRET) -> Any:
    """The stored authorized-user credentials, pointed at the configured token URL."""
    from google.oauth2.credentials import Credentials

    info = secrets.get_json(token_secret)
    if not info or not info.get("refresh_token"):
        raise NotConnected(SOURCE, command=auth_command(SOURCE))
    try:
        creds = Credentials.from_authorized_user_info(info)
    except ValueError as err:
        raise AuthExpired(
            SOURCE, f"stored token unusable: {err}", command=auth_command(SOURCE)
        ) from None
    moved = creds.with_token_uri(settings.sources.google_calendar.token_url)
    moved.expiry = creds.expiry  # the copy drops it, which would skip the due refresh
    return moved


def save_credentials(secrets: Secrets, creds: Any, token_secret: str = TOKEN_SECRET) -> None:
    secrets.set_json(token_secret, json.loads(creds.to_json()))


def http_client(settings: Settings) -> Any:
    """httplib2 with its inflate limits set to the cap every provider's answer has.

    httplib2 reads the whole (compressed) body, then inflates it in steps of
    `decode_limit_chunk` input bytes, each of which may grow about a thousandfold; past
    10 MB it refuses ratios over 100 and anything over the hard limit, so a gzip bomb
    stops after a few steps instead of filling the memory.
    """
    import httplib2

    return httplib2.Http(
        timeout=settings.http.timeout_seconds,
        decode_limit_hard=MAX_RESPONSE_BYTES,
        decode_limit_chunk=8 << 10,
    )


@contextmanager
def google_service(
    settings: Settings,
    secrets: Secrets,
    api: str,
    version: str,
    endpoint: str,
    *,
    http: Any = None,
    token_secret: str = TOKEN_SECRET,
) -> Iterator[Any]:
    """A client of a Google API on the stored credentials, built from the discovery document
    bundled in the wheel (no network); an access token refreshed meanwhile is kept for the
    next run once the pull succeeded."""
    from google_auth_httplib2 import AuthorizedHttp
    from googleapiclient.discovery import build

    creds = load_credentials(settings, secrets, token_secret)
    token_before = creds.token
    base = http if http is not None else http_client(settings)
    try:
        yield build(
            api,
            version,
            http=AuthorizedHttp(creds, http=base),
            cache_discovery=False,
            static_discovery=True,
            client_options={"api_endpoint": endpoint},
        )
    finally:
        if http is None:
            # httplib2 keeps its connections open for reuse; a daemon must not leak them.
            for conn in list(getattr(base, "connections", {}).values()):
                conn.close()
    if creds.token != token_before:
        save_credentials(secrets, creds, token_secret)


def execute(
    request: Any,
    policy: RetryPolicy,
    what: str,
    *,
    source: str = SOURCE,
    not_found: str = "calendar not found; check [sources.google_calendar] calendars",
) -> dict[str, Any]:
    """Run one API request; translate Google's failures into the bridge's errors.

    Shared by the Google sources (same token, same error shapes): `source` names the one
    whose authorization failed, `not_found` says what a 404 means for it.
    """
    import httplib2
    from google.auth.exceptions import RefreshError, TransportError
    from googleapiclient.errors import HttpError
    from httplib2.decode import DecodeLimitError, DecodeRatioError

    def once() -> dict[str, Any]:
        spend(source)
        try:
            return request.execute()
        except (DecodeLimitError, DecodeRatioError):
            # httplib2 stopped inflating a body past its limits (see `http_client`).
            raise too_big(what) from None
        except (ValueError, RecursionError) as err:
            # The client decodes the body as UTF-8 JSON; a truncated one comes back as text.
            raise unreadable(what, err) from None
        except HttpError as err:
            status = int(err.resp.status)
            reason = getattr(err, "reason", "") or ""
            if status == 410:
                raise CursorInvalid(f"{what}: sync token expired (410 Gone)") from None
            if status == 401:
                raise AuthExpired(
                    source, f"{what} answered 401", command=auth_command(source)
                ) from None
            details = f"{reason} {getattr(err, 'error_details', '')}".lower()
            if status == 429 or (
                status == 403 and ("ratelimit" in details or "rate limit" in details)
            ):
                wait = retry_after_seconds(dict(err.resp))
                raise RateLimited(f"{what}: rate limited", retry_after=wait) from None
            if status == 404:
                raise SourceError(f"{what}: {not_found}") from None
            if status >= 500:
                raise RetryableError(f"server error {status}") from None
            raise SourceError(f"{what} answered {status}: {reason}") from None
        except RefreshError as err:
            detail = err.args[0] if err.args else "refresh failed"
            raise AuthExpired(
                source, f"{detail}; {TESTING_HINT}", command=auth_command(source)
            ) from None
        except (TransportError, OSError, httplib2.HttpLib2Error) as err:
            raise RetryableError(f"network error: {type(err).__name__}") from None

    return with_retries(once, policy, what, (RetryableError,))


# --- normalizing ------------------------------------------------------------------------


def _zone(name: str | None, fallback: tzinfo) -> tzinfo:
    if not name:
        return fallback
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return fallback


def _when(value: dict[str, Any], tz: tzinfo) -> tuple[datetime, bool]:
    """An EventDateTime as an aware datetime; `date` = all day, in the person's zone."""
    if value.get("date"):
        day = date.fromisoformat(value["date"])
        return datetime(day.year, day.month, day.day, tzinfo=tz), True
    zone = _zone(value.get("timeZone"), tz)
    text = value["dateTime"]
    try:
        return parse_instant(text).astimezone(zone), False
    except ValueError:  # no offset: wall time in the event's zone
        return datetime.fromisoformat(text).replace(tzinfo=zone), False


def _stamp(value: dict[str, Any], tz: tzinfo) -> str:
    """The same recurrence-id form as the .ics reader: YYYYMMDD or UTC YYYYMMDDTHHMMSSZ."""
    when, all_day = _when(value, tz)
    return when.strftime("%Y%m%d") if all_day else when.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def _text(doc: dict[str, Any], key: str, default: str = "") -> str:
    """A text field; TypeError (the event is skipped) when it is a number, a list, ..."""
    value = doc.get(key)
    if value is None or value == "":
        return default
    if not isinstance(value, str):
        raise TypeError(f"{key} is a {type(value).__name__}, not text")
    return value


def _listed_key(item: Any, tz: tzinfo) -> tuple[str, str | None] | None:
    """(uid, recurrence_id) of an event that could not be read, as far as it can be told."""
    if not isinstance(item, dict):
        return None
    uid = item.get("recurringEventId") or item.get("id")
    if not isinstance(uid, str) or not uid:
        return None
    if not item.get("recurringEventId"):
        return uid, ""
    try:
        return uid, _stamp(item["originalStartTime"], tz)
    except MALFORMED:
        return uid, None


def is_own_event(item: dict[str, Any]) -> bool:
    """Written by rhythm-bridge's write-back (its mark in extendedProperties.private)."""
    props = item.get("extendedProperties")
    private = props.get("private") if isinstance(props, dict) else None
    return isinstance(private, dict) and OWN_EVENT_KEY in private


def event_record(calendar_id: str, item: dict[str, Any], tz: tzinfo) -> list[Any]:
    """One API event as an EventRecord, or a Cancellation when the event is gone; nothing
    for an event rhythm-bridge wrote itself (a suggestion is not the person's own plan)."""
    if is_own_event(item):
        return []
    series = _text(item, "recurringEventId")
    uid = series or _text(item, "id")
    if not uid:
        raise KeyError("id")
    original = item.get("originalStartTime")
    recurrence_id = _stamp(original, tz) if series and original else ""
    status = _text(item, "status", "confirmed")
    if status == "cancelled":
        # A cancelled instance carries only id, recurringEventId and originalStartTime;
        # a cancelled single event or whole series only its id.
        return [Cancellation(calendar_id, uid, recurrence_id if series else None)]
    start, all_day = _when(item["start"], tz)
    end, _ = _when(item.get("end") or item["start"], tz)
    if end <= start:
        end = start + (timedelta(days=1) if all_day else timedelta(0))
    attendees = [a for a in item.get("attendees") or [] if not a.get("resource")]
    me = next((a for a in attendees if a.get("self")), None)
    event_type = _text(item, "eventType", "default")
    extra: dict[str, Any] = {}
    if event_type == "workingLocation":
        extra["working_location"] = (item.get("workingLocationProperties") or {}).get("type")
    return [
        EventRecord(
            calendar_id=calendar_id,
            uid=uid,
            title=_text(item, "summary"),
            start=start,
            end=end,
            recurrence_id=recurrence_id,
            all_day=all_day,
            status=status,
            transparency=_text(item, "transparency", "opaque"),
            event_type=event_type,
            attendee_count=len(attendees),
            self_response=_text(me or {}, "responseStatus"),
            location=" ".join(_text(item, "location").split()),
            organized_by_me=(item.get("organizer") or {}).get("self") is True,
            extra=extra,
        )
    ]


# --- one pull ---------------------------------------------------------------------------


def list_events(
    service: Any,
    calendar_id: str,
    params: dict[str, Any],
    policy: RetryPolicy,
    progress: Progress,
) -> tuple[list[dict[str, Any]], str | None]:
    """Every page of one events.list query; (items, nextSyncToken of the last page)."""
    events = service.events()
    request = events.list(calendarId=calendar_id, **params)
    items: list[dict[str, Any]] = []
    what = f"google calendar {calendar_id}"
    while request is not None:
        page = execute(request, policy, what)
        items.extend(page_items(page, "items", what))
        progress(calendar_id, len(items))
        sync_token = page.get("nextSyncToken")
        request = events.list_next(request, page)
    if not isinstance(sync_token, str) or not sync_token:
        # The last page always carries one. Without it the list may be cut short, and a
        # full list is taken as the whole truth: what it lacks would be marked cancelled.
        raise SourceError(f"{what}: the last page has no nextSyncToken; {RETRY_NEXT_SYNC}")
    return items, sync_token


def pull(
    settings: Settings,
    secrets: Secrets,
    ctx: ReadContext,
    cursors: Cursors,
    *,
    since: datetime | None = None,
    progress: Progress = no_progress,
    http: Any = None,
) -> PullResult:
    """Sync every configured calendar (incrementally when it has a sync token)."""
    cfg = settings.sources.google_calendar
    policy = RetryPolicy.from_settings(settings)
    time_min = since or (ctx.now - timedelta(days=ctx.past_days))
    result = PullResult()
    with google_service(
        settings, secrets, "calendar", "v3", cfg.api_base_url, http=http
    ) as service:
        run = _Pull(service, cursors, since, time_min, ctx, policy, progress, result)
        for calendar_id in cfg.calendars:
            try:
                _sync_calendar(run, calendar_id)
            except (AuthExpired, RateLimited, Transient):
                raise  # the whole source is affected
            except SourceError as err:
                # One bad calendar id must not stop the others; the error is still reported.
                result.errors.append(str(err))
    return result


@dataclass
class _Pull:
    """One pull of every configured calendar: the client, where it starts, what it obeys
    and reports to, and what it collects."""

    service: Any
    cursors: Cursors
    since: datetime | None
    time_min: datetime
    ctx: ReadContext
    policy: RetryPolicy
    progress: Progress
    result: PullResult


def _sync_calendar(run: _Pull, calendar_id: str) -> None:
    """Incremental list when a sync token is stored, else (or after a 410) a full one."""
    service, cursors, since, time_min = run.service, run.cursors, run.since, run.time_min
    ctx, policy, progress, result = run.ctx, run.policy, run.progress, run.result
    token = None if since else cursors.get((STREAM, calendar_id))
    items: list[dict[str, Any]] = []
    if token:
        try:
            items, next_token = list_events(
                service,
                calendar_id,
                {"singleEvents": True, "syncToken": token, "maxResults": PAGE_SIZE},
                policy,
                progress,
            )
        except CursorInvalid:
            log.info("%s %s: sync token expired, full resync", SOURCE, calendar_id)
            token = None
    if not token:
        params = {"singleEvents": True, "timeMin": iso_z(time_min), "maxResults": PAGE_SIZE}
        items, next_token = list_events(service, calendar_id, params, policy, progress)
    convert = partial(event_record, calendar_id, tz=ctx.tz)
    unreadable: set[tuple[str, str | None]] = set()
    for item in items:
        for rec in normalize(SOURCE, "event", [item], convert):
            if isinstance(rec, Cancellation):
                result.cancellations.append(rec)
                continue
            result.records.append(rec)
            if isinstance(rec, Skipped) and (key := _listed_key(item, ctx.tz)):
                unreadable.add(key)
    if not token:
        # A full list is the whole truth from timeMin on: what it lacks is gone. What it
        # lists but could not be read is not gone, and keeps its stored version.
        scope = ReplaceScope(calendar_id, time_min, _FAR_FUTURE, frozenset(unreadable))
        result.records.append(scope)
    result.cursors[(STREAM, calendar_id)] = next_token
