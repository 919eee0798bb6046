"""The opt-in write-back: accepted and proposed suggestions as events in a Google calendar.

What the calendar should hold is the calendar feed's list (bridge.out.calendar_feed): every
accepted suggestion (confirmed) and every window a Reschedule proposed until it is ignored
or rescheduled again (tentative). Each push compares that list, derived from the stored
answers, with what was written (the `google_writes` table) and makes the difference:
insert, patch or delete. The answers are the intent, committed when the person answered;
a push that fails half-way (network, 429, 5xx) leaves the rest for the next cycle.

Idempotent: an event's id is derived from its recommendation (base32hex, as Google allows
for client-chosen ids), so a retried insert that already reached Google answers 409 and
becomes a patch, never a second event. Only ids derived here are ever addressed, and an
event found under such an id without rhythm-bridge's mark is left alone: the person's own
events are never touched. Nothing is written unless [google_write] enabled = true and the
separate consent (`rhythm-bridge auth google-write`) was given.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlmodel import col

from bridge.config import Settings
from bridge.errors import BridgeError
from bridge.out.calendar_feed import in_feed
from bridge.store import Store, upsert
from bridge.store.db import utcnow
from bridge.store.models import Feedback, GoogleWrite, Recommendation

log = logging.getLogger("rhythm_bridge.google_write")

STATUS_META = "google_write"
CONSENT_COMMAND = "rhythm-bridge auth google-write"
MARK_VALUE = "suggestion"


class ConsentNeeded(BridgeError):
    """The write consent is missing, revoked, or lacks the events scope."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"google_write: {detail}; run `{CONSENT_COMMAND}` to give the events permission "
            "again (or set [google_write] enabled = false)"
        )


class TryLater(BridgeError):
    """Network trouble, 429 or a server error: the next cycle tries again."""


class CalendarRefused(BridgeError):
    """The configured calendar does not exist or cannot be written with this account."""


@dataclass
class PushReport:
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    skipped: list[str] = field(default_factory=list)  # ids we will not touch, and why
    error: str | None = None
    status: str = "ok"  # ok | retry | needs_consent | off

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "inserted": self.inserted,
            "updated": self.updated,
            "deleted": self.deleted,
            "skipped": self.skipped,
            "error": self.error,
        }


def event_id(rec: Recommendation) -> str:
    """A stable id for the recommendation's event: base32hex (a-v, 0-9), 26 characters.

    From the recommendation's id and creation instant, so a new database (ids from 1
    again) never reuses the id of an event an earlier installation wrote.
    """
    created = rec.created_at.astimezone(UTC).isoformat()
    digest = hashlib.sha256(f"rhythm-bridge:{rec.id}:{created}".encode()).digest()
    return base64.b32hexencode(digest[:16]).decode().lower().rstrip("=")


def event_body(rec: Recommendation, fb: Feedback | None, settings: Settings) -> dict[str, Any]:
    """The event as Google's events resource: only the action and its time leave the
    machine (no rationale, meters or belief), marked as rhythm-bridge's own."""
    tz = settings.tz
    accepted = fb is not None and fb.response == "accepted"
    assert rec.window_start is not None and rec.window_end is not None
    return {
        "id": event_id(rec),
        "summary": rec.action.replace("_", " ").capitalize(),
        "description": (
            "Accepted in rhythm-bridge."
            if accepted
            else "Proposed by rhythm-bridge after a Reschedule; answer it on the page."
        ),
        "start": {"dateTime": rec.window_start.astimezone(tz).isoformat(), "timeZone": str(tz)},
        "end": {"dateTime": rec.window_end.astimezone(tz).isoformat(), "timeZone": str(tz)},
        "status": "confirmed" if accepted else "tentative",
        "transparency": "opaque",
        "extendedProperties": {
            "private": {"rhythmBridge": MARK_VALUE, "rhythmBridgeRecommendation": str(rec.id)}
        },
    }


def content_hash(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _call(request: Any) -> tuple[int, dict[str, Any]]:
    """Run one request: (status, body) for 2xx and the answers the caller decides on
    (404, 409, 410); ConsentNeeded or TryLater for the rest."""
    import httplib2
    from google.auth.exceptions import RefreshError, TransportError
    from googleapiclient.errors import HttpError

    try:
        return 200, request.execute(num_retries=0) or {}
    except HttpError as err:
        status = int(err.resp.status)
        reasons = _reasons(err)
        if status in (404, 409, 410):
            return status, {}
        if status == 401:
            raise ConsentNeeded("Google refused the stored token (401)") from None
        if status == 403 and "insufficientPermissions" in reasons:
            raise ConsentNeeded("the stored consent does not allow writing events") from None
        if status == 403 and reasons & {"requiredAccessLevel", "forbidden"}:
            # A calendar shared with the person read-only, or someone else's.
            raise CalendarRefused("Google refuses writing there (403, no writer access)") from None
        if status == 429 or (
            status == 403 and reasons & {"rateLimitExceeded", "userRateLimitExceeded"}
        ):
            raise TryLater(f"Google asked to slow down ({status})") from None
        if status >= 500:
            raise TryLater(f"Google answered {status}") from None
        raise BridgeError(f"Google answered {status} ({', '.join(sorted(reasons))})") from None
    except RefreshError:
        raise ConsentNeeded("the consent was revoked or has expired") from None
    except (TransportError, OSError, httplib2.HttpLib2Error) as err:
        raise TryLater(f"network error: {type(err).__name__}") from None


def _reasons(err: Any) -> set[str]:
    try:
        doc = json.loads(err.content or b"{}")
    except ValueError:
        return set()
    errors = (doc.get("error") or {}).get("errors") or [] if isinstance(doc, dict) else []
    return {e.get("reason", "") for e in errors if isinstance(e, dict)}


def _set_row(
    store: Store, rec: Recommendation, calendar: str, state: str, digest: str = ""
) -> None:
    with store.transaction() as session:
        upsert(
            session,
            GoogleWrite,
            [
                {
                    "recommendation_id": rec.id,
                    "calendar_id": calendar,
                    "event_id": event_id(rec),
                    "state": state,
                    "content_hash": digest,
                    "updated_at": utcnow(),
                }
            ],
            keys=("recommendation_id",),
            update=("calendar_id", "event_id", "state", "content_hash"),
            touch=("updated_at",),
        )


@dataclass(frozen=True)
class Op:
    kind: str  # insert | patch | delete
    rec: Recommendation
    calendar: str
    body: dict[str, Any] | None = None


def planned(store: Store, settings: Settings, now: datetime) -> list[Op]:
    """What to change in Google so it holds what the answers say; deletes first."""
    calendar = settings.google_write.calendar
    with store.session() as session:
        rows = session.execute(
            select(Recommendation, Feedback, GoogleWrite)
            .outerjoin(Feedback, col(Feedback.recommendation_id) == col(Recommendation.id))
            .outerjoin(GoogleWrite, col(GoogleWrite.recommendation_id) == col(Recommendation.id))
            .where(col(Recommendation.window_start).is_not(None))
            .where(
                (col(GoogleWrite.id).is_not(None))
                | (col(Recommendation.window_end) > now.astimezone(UTC))
            )
            .order_by(col(Recommendation.window_start))
        ).all()
    deletes: list[Op] = []
    writes: list[Op] = []
    for rec, fb, row in rows:
        wanted = in_feed(rec, fb)
        present = row is not None and row.state == "present"
        if present and (not wanted or row.calendar_id != calendar):
            deletes.append(Op("delete", rec, row.calendar_id))
            present = False
        if not wanted:
            continue
        body = event_body(rec, fb, settings)
        if not present:
            if row is None and rec.window_end <= now:
                continue  # answered before the write-back was on: the past stays as it is
            writes.append(Op("insert", rec, calendar, body))
        elif row.content_hash != content_hash(body):
            writes.append(Op("patch", rec, calendar, body))
    return deletes + writes


def push(
    store: Store,
    settings: Settings,
    now: datetime,
    *,
    secrets: Any = None,
    http: Any = None,
) -> PushReport:
    """Bring the Google calendar in line with the answers; never raises for Google's sake.

    The outcome is kept (meta `google_write`) for `status`: a consent to give again is
    said there and in the log, once per push, and the cycle goes on.
    """
    report = PushReport()
    if not settings.google_write.enabled:
        report.status = "off"
        return report
    ops = planned(store, settings, now)
    if ops:
        try:
            _apply(store, settings, ops, report, secrets=secrets, http=http)
        except ConsentNeeded as err:
            report.status, report.error = "needs_consent", str(err)
            log.warning("%s", err)
        except TryLater as err:
            report.status, report.error = "retry", f"google_write: {err}; tried again next cycle"
            log.warning("%s", report.error)
        except CalendarRefused as err:
            report.status = "error"
            report.error = (
                f"google_write: [google_write] calendar {settings.google_write.calendar!r}: "
                f"{err}; name a calendar of yours (its id is in Google Calendar > Settings > "
                "the calendar > Integrate calendar)"
            )
            log.warning("%s", report.error)
        except BridgeError as err:
            report.status, report.error = "retry", f"google_write: {err}"
            log.warning("%s", report.error)
    _remember(store, report, now)
    return report


def _apply(
    store: Store,
    settings: Settings,
    ops: list[Op],
    report: PushReport,
    *,
    secrets: Any,
    http: Any,
) -> None:
    from bridge.auth.secrets import Secrets
    from bridge.errors import AuthExpired, NotConnected
    from connectors.google_calendar import WRITE_TOKEN_SECRET, google_service

    secrets = secrets or Secrets.from_settings(settings)
    endpoint = settings.sources.google_calendar.api_base_url
    try:
        with google_service(
            settings,
            secrets,
            "calendar",
            "v3",
            endpoint,
            http=http,
            token_secret=WRITE_TOKEN_SECRET,
        ) as service:
            events = service.events()
            for op in ops:
                _one(store, events, op, report)
    except NotConnected:
        raise ConsentNeeded("no consent for writing events is stored") from None
    except AuthExpired as err:
        raise ConsentNeeded(str(err)) from None


def _one(store: Store, events: Any, op: Op, report: PushReport) -> None:
    eid = event_id(op.rec)
    if op.kind == "delete":
        # 204 done; 410 already deleted (by the person, or by an earlier try whose answer
        # was lost); 404 never there. Each leaves it absent.
        _call(events.delete(calendarId=op.calendar, eventId=eid, sendUpdates="none"))
        _set_row(store, op.rec, op.calendar, "absent")
        report.deleted += 1
        return
    assert op.body is not None
    digest = content_hash(op.body)
    if op.kind == "insert":
        status, _ = _call(events.insert(calendarId=op.calendar, body=op.body, sendUpdates="none"))
        if status == 200:
            _set_row(store, op.rec, op.calendar, "present", digest)
            report.inserted += 1
            return
        if status == 404:
            raise CalendarRefused("Google has no such calendar (404)")
        if status != 409:
            raise BridgeError(f"inserting event {eid} answered {status}")
        # The id exists: an earlier try got through, or we deleted it (Google keeps a
        # deleted event as cancelled and refuses its id). Ours only if it bears our mark.
        status, found = _call(events.get(calendarId=op.calendar, eventId=eid))
        from connectors.google_calendar import is_own_event

        if status != 200 or not is_own_event(found):
            report.skipped.append(f"{eid}: an event with this id is not rhythm-bridge's")
            log.warning("google_write: event %s exists and is not ours; left alone", eid)
            return
    body = {k: v for k, v in op.body.items() if k != "id"}
    status, _ = _call(
        events.patch(calendarId=op.calendar, eventId=eid, body=body, sendUpdates="none")
    )
    if status == 404:  # gone for good (purged): write it again
        status, _ = _call(events.insert(calendarId=op.calendar, body=op.body, sendUpdates="none"))
    if status != 200:
        raise BridgeError(f"writing event {eid} answered {status}")
    _set_row(store, op.rec, op.calendar, "present", digest)
    if op.kind == "insert":
        report.inserted += 1
    else:
        report.updated += 1


def _remember(store: Store, report: PushReport, now: datetime) -> None:
    doc = {**report.as_dict(), "at": now.astimezone(UTC).isoformat()}
    with store.transaction() as session:
        store.set_meta(session, STATUS_META, json.dumps(doc))


def last_push(store: Store) -> dict[str, Any] | None:
    raw = store.get_meta(STATUS_META)
    return json.loads(raw) if raw else None
