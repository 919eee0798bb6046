"""Google Calendar through HttpMockSequence: paging to nextSyncToken, incremental, 410."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httplib2
import pytest
from googleapiclient.http import HttpMockSequence
from sqlalchemy import select

from bridge.auth.secrets import Secrets
from bridge.config import Settings
from bridge.intake.live import load_cursors
from bridge.intake.sources import get_state, is_due, run_source
from bridge.store import Store
from bridge.store.models import CalendarEvent
from connectors.base import ReadContext
from connectors.google_calendar import TOKEN_SECRET
from tests.conftest import BERLIN

NOW = datetime(2026, 11, 19, 8, 40, tzinfo=BERLIN)
SERIES = "7k4rg3u1d7lq6v8h2m5r0s9abc"


def _page(items: list[dict[str, Any]], *, next_page: str = "", sync: str = "") -> tuple:
    body: dict[str, Any] = {
        "kind": "calendar#events",
        "etag": '"p33c9vq8r2ei8m0g"',
        "summary": "me@example.com",
        "updated": "2026-11-18T21:03:11.402Z",
        "timeZone": "Europe/Berlin",
        "accessRole": "owner",
        "defaultReminders": [{"method": "popup", "minutes": 10}],
        "items": items,
    }
    if next_page:
        body["nextPageToken"] = next_page
    if sync:
        body["nextSyncToken"] = sync
    return ({"status": "200", "content-type": "application/json; charset=UTF-8"}, json.dumps(body))


def _event(eid: str, summary: str, start: dict[str, str], end: dict[str, str], **extra: Any):
    return {
        "kind": "calendar#event",
        "etag": '"3429871234567000"',
        "id": eid,
        "status": "confirmed",
        "htmlLink": f"https://www.google.com/calendar/event?eid={eid}",
        "created": "2026-10-01T09:00:00.000Z",
        "updated": "2026-11-10T09:00:00.000Z",
        "summary": summary,
        "creator": {"email": "me@example.com", "self": True},
        "organizer": {"email": "me@example.com", "self": True},
        "start": start,
        "end": end,
        "iCalUID": f"{eid.split('_')[0]}@google.com",
        "sequence": 0,
        "reminders": {"useDefault": True},
        "eventType": "default",
        **extra,
    }


def _instance(day: str, hour: str = "09:30", summary: str = "Team standup", **extra: Any):
    return _event(
        f"{SERIES}_{day.replace('-', '')}T{hour.replace(':', '')}00Z",
        summary,
        {"dateTime": f"{day}T{hour}:00+01:00", "timeZone": "Europe/Berlin"},
        {"dateTime": f"{day}T{hour[:3]}45:00+01:00", "timeZone": "Europe/Berlin"},
        recurringEventId=SERIES,
        originalStartTime={"dateTime": f"{day}T{hour}:00+01:00", "timeZone": "Europe/Berlin"},
        **extra,
    )


PAGE_1 = [
    _instance("2026-11-18"),
    _instance("2026-11-19"),
    _event(
        "allday1",
        "Mum's birthday",
        {"date": "2026-11-21"},
        {"date": "2026-11-22"},
        transparency="transparent",
    ),
    _event(
        "focus1",
        "Focus time",
        {"dateTime": "2026-11-19T13:00:00+01:00"},
        {"dateTime": "2026-11-19T15:00:00+01:00"},
        eventType="focusTime",
        focusTimeProperties={
            "autoDeclineMode": "declineOnlyNewConflictingInvitations",
            "chatStatus": "doNotDisturb",
        },
    ),
]
PAGE_2 = [
    _event(
        "ooo1",
        "Out of office",
        {"dateTime": "2026-11-23T00:00:00+01:00"},
        {"dateTime": "2026-11-24T00:00:00+01:00"},
        eventType="outOfOffice",
        outOfOfficeProperties={"autoDeclineMode": "declineAllConflictingInvitations"},
    ),
    _event(
        "wl1",
        "Home",
        {"date": "2026-11-20"},
        {"date": "2026-11-21"},
        eventType="workingLocation",
        transparency="transparent",
        visibility="public",
        workingLocationProperties={"type": "homeOffice", "homeOffice": {}},
    ),
    _event(
        "review1",
        "Quarterly review",
        {"dateTime": "2026-11-20T10:00:00Z"},
        {"dateTime": "2026-11-20T11:00:00Z"},
        organizer={"email": "boss@example.com"},
        attendees=[
            {"email": "boss@example.com", "organizer": True, "responseStatus": "accepted"},
            {"email": "me@example.com", "self": True, "responseStatus": "declined"},
            {"email": "ana@example.com", "responseStatus": "needsAction"},
            {
                "email": "room-4@resource.calendar.google.com",
                "resource": True,
                "responseStatus": "accepted",
            },
        ],
    ),
]
TEAM = [
    _event(
        "team1",
        "Team lunch",
        {"dateTime": "2026-11-19T12:00:00+01:00"},
        {"dateTime": "2026-11-19T13:00:00+01:00"},
    )
]


@pytest.fixture
def gstore(live_settings: Settings):
    s = Store(live_settings.database_url)
    yield s
    s.dispose()


@pytest.fixture
def ctx() -> ReadContext:
    return ReadContext(tz=BERLIN, now=NOW)


def _store_creds(secrets: Secrets, *, expired: bool = False) -> None:
    expiry = datetime.now(UTC) + timedelta(hours=-1 if expired else 1)
    secrets.set_json(
        TOKEN_SECRET,
        {
            "token": "ya29.google-access-token-value",
            "refresh_token": "1//google-refresh-token-value",
            "token_uri": "https://oauth2.googleapis.com/token",
            "client_id": "1234-abc.apps.googleusercontent.com",
            "client_secret": "GOCSPX-google-client-secret-value",
            "scopes": ["https://www.googleapis.com/auth/calendar.readonly"],
            "expiry": expiry.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        },
    )


def _serve(monkeypatch: pytest.MonkeyPatch, responses: list[tuple]) -> HttpMockSequence:
    mock = HttpMockSequence(responses)
    monkeypatch.setattr(httplib2, "Http", lambda *a, **k: mock)
    return mock


def _query(uri: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(uri).query)


def _events(store: Store) -> dict[tuple[str, str, str], CalendarEvent]:
    with store.session() as session:
        rows = session.execute(select(CalendarEvent)).scalars().all()
    return {(r.calendar_id, r.uid, r.recurrence_id): r for r in rows}


def _full_sync(monkeypatch, secrets, gstore, live_settings, ctx) -> HttpMockSequence:
    _store_creds(secrets)
    mock = _serve(
        monkeypatch,
        [
            _page(PAGE_1, next_page="page-2-token"),
            _page(PAGE_2, sync="sync-primary-1"),
            _page(TEAM, sync="sync-team-1"),
        ],
    )
    outcome = run_source(gstore, live_settings, "google_calendar", ctx)
    assert outcome.status == "ok", outcome.error
    return mock


def test_full_sync_pages_to_the_sync_token_and_normalizes_every_kind(
    monkeypatch, secrets, gstore, live_settings, ctx
) -> None:
    mock = _full_sync(monkeypatch, secrets, gstore, live_settings, ctx)
    uris = [req[0] for req in mock.request_sequence]
    assert len(uris) == 3
    first, second, team = (_query(u) for u in uris)
    assert "timeMin" in team and "syncToken" not in team
    assert "/calendar/v3/calendars/primary/events" in uris[0]
    assert first["singleEvents"] == ["true"] and first["maxResults"] == ["2500"]
    assert first["timeMin"] == ["2026-10-15T06:40:00.000Z"]
    assert "syncToken" not in first
    assert second["pageToken"] == ["page-2-token"]
    assert "team%40example.com" in uris[2]
    assert mock.request_sequence[0][3]["authorization"].startswith("Bearer ")
    assert load_cursors(gstore, "google_calendar") == {
        ("events", "primary"): "sync-primary-1",
        ("events", "team@example.com"): "sync-team-1",
    }
    ev = _events(gstore)
    assert len(ev) == 8
    standup = ev[("primary", SERIES, "20261119T083000Z")]
    assert standup.title == "Team standup" and not standup.all_day
    assert standup.utc_offset_min == 60
    birthday = ev[("primary", "allday1", "")]
    assert birthday.all_day and birthday.transparency == "transparent"
    assert birthday.start_utc == datetime(2026, 11, 20, 23, 0, tzinfo=UTC)  # Berlin midnight
    assert ev[("primary", "focus1", "")].event_type == "focusTime"
    assert ev[("primary", "ooo1", "")].event_type == "outOfOffice"
    assert ev[("primary", "wl1", "")].event_type == "workingLocation"
    review = ev[("primary", "review1", "")]
    assert review.attendee_count == 3 and review.self_response == "declined"
    assert ev[("team@example.com", "team1", "")].title == "Team lunch"


def test_incremental_page_cancels_an_instance_and_moves_another(
    monkeypatch, secrets, gstore, live_settings, ctx
) -> None:
    _full_sync(monkeypatch, secrets, gstore, live_settings, ctx)
    cancelled = {
        "kind": "calendar#event",
        "etag": '"3429871234568000"',
        "id": f"{SERIES}_20261118T083000Z",
        "status": "cancelled",
        "recurringEventId": SERIES,
        "originalStartTime": {"dateTime": "2026-11-18T09:30:00+01:00", "timeZone": "Europe/Berlin"},
    }
    moved = _instance("2026-11-19")
    moved["start"] = {"dateTime": "2026-11-19T11:00:00+01:00", "timeZone": "Europe/Berlin"}
    moved["end"] = {"dateTime": "2026-11-19T11:15:00+01:00", "timeZone": "Europe/Berlin"}
    deleted_single = {"kind": "calendar#event", "id": "focus1", "status": "cancelled"}
    mock = _serve(
        monkeypatch,
        [
            _page([cancelled, moved], next_page="inc-page-2"),
            _page([deleted_single], sync="sync-primary-2"),
            _page([], sync="sync-team-2"),
        ],
    )
    outcome = run_source(gstore, live_settings, "google_calendar", ctx)
    assert outcome.status == "ok", outcome.error
    q = [_query(r[0]) for r in mock.request_sequence]
    assert q[0]["syncToken"] == ["sync-primary-1"] and "timeMin" not in q[0]
    assert q[1]["syncToken"] == ["sync-primary-1"] and q[1]["pageToken"] == ["inc-page-2"]
    assert q[2]["syncToken"] == ["sync-team-1"]
    ev = _events(gstore)
    assert len(ev) == 8  # nothing duplicated
    assert ev[("primary", SERIES, "20261118T083000Z")].status == "cancelled"
    kept = ev[("primary", SERIES, "20261119T083000Z")]
    assert kept.status == "confirmed"
    assert kept.start_utc == datetime(2026, 11, 19, 10, 0, tzinfo=UTC)
    assert ev[("primary", "focus1", "")].status == "cancelled"
    assert load_cursors(gstore, "google_calendar")[("events", "primary")] == "sync-primary-2"


def test_410_drops_the_token_and_resyncs_in_full(
    monkeypatch, secrets, gstore, live_settings, ctx
) -> None:
    _full_sync(monkeypatch, secrets, gstore, live_settings, ctx)
    gone = json.dumps(
        {
            "error": {
                "code": 410,
                "message": "Sync token is no longer valid, a full sync is required.",
                "errors": [
                    {
                        "domain": "global",
                        "reason": "fullSyncRequired",
                        "message": "Sync token is no longer valid, a full sync is required.",
                    }
                ],
            }
        }
    )
    mock = _serve(
        monkeypatch,
        [
            ({"status": "410"}, gone),
            _page(PAGE_1[1:], sync="sync-primary-fresh"),  # the 18th's standup is gone
            _page(TEAM, sync="sync-team-2"),
        ],
    )
    outcome = run_source(gstore, live_settings, "google_calendar", ctx)
    assert outcome.status == "ok", outcome.error
    q = [_query(r[0]) for r in mock.request_sequence]
    assert "syncToken" in q[0] and "syncToken" not in q[1] and "timeMin" in q[1]
    ev = _events(gstore)
    assert ev[("primary", SERIES, "20261118T083000Z")].status == "cancelled"
    assert ev[("primary", "review1", "")].status == "cancelled"  # absent from the fresh list
    assert ev[("primary", SERIES, "20261119T083000Z")].status == "confirmed"
    assert load_cursors(gstore, "google_calendar")[("events", "primary")] == "sync-primary-fresh"


def test_server_error_is_retried(monkeypatch, secrets, gstore, live_settings, ctx) -> None:
    _store_creds(secrets)
    _serve(
        monkeypatch,
        [({"status": "503"}, "{}"), _page(TEAM, sync="s1"), _page([], sync="s2")],
    )
    assert run_source(gstore, live_settings, "google_calendar", ctx).status == "ok"


def test_expired_refresh_token_is_reauth_with_the_testing_hint(
    monkeypatch, secrets, gstore, live_settings, ctx
) -> None:
    _store_creds(secrets, expired=True)
    mock = _serve(
        monkeypatch,
        [
            (
                {"status": "400"},
                json.dumps(
                    {
                        "error": "invalid_grant",
                        "error_description": "Token has been expired or revoked.",
                    }
                ),
            )
        ],
    )
    outcome = run_source(gstore, live_settings, "google_calendar", ctx)
    assert outcome.status == "reauth_required"
    assert "`rhythm-bridge auth google`" in (outcome.error or "")  # one spelling everywhere
    assert "Testing" in (outcome.error or "")
    assert mock.request_sequence[0][0] == "https://oauth2.googleapis.com/token"
    state = get_state(gstore, "google_calendar")
    assert state is not None and state.status == "reauth_required"
    assert not is_due(gstore, live_settings, "google_calendar", ctx.now + timedelta(days=2))


def test_refreshed_access_token_is_kept(monkeypatch, secrets, gstore, live_settings, ctx) -> None:
    _store_creds(secrets, expired=True)
    fresh = {
        "access_token": "ya29.refreshed-access-value",
        "expires_in": 3599,
        "scope": "https://www.googleapis.com/auth/calendar.readonly",
        "token_type": "Bearer",
    }
    _serve(
        monkeypatch,
        [({"status": "200"}, json.dumps(fresh)), _page([], sync="s1"), _page([], sync="s2")],
    )
    assert run_source(gstore, live_settings, "google_calendar", ctx).status == "ok"
    stored = secrets.get_json(TOKEN_SECRET) or {}
    assert stored["token"] == "ya29.refreshed-access-value"
    assert stored["refresh_token"] == "1//google-refresh-token-value"
    assert time.time() < datetime.fromisoformat(stored["expiry"].replace("Z", "+00:00")).timestamp()


def test_rate_limit_defers_the_source(monkeypatch, secrets, gstore, live_settings, ctx) -> None:
    _store_creds(secrets)
    body = json.dumps(
        {
            "error": {
                "code": 403,
                "message": "Rate Limit Exceeded",
                "errors": [
                    {
                        "domain": "usageLimits",
                        "reason": "rateLimitExceeded",
                        "message": "Rate Limit Exceeded",
                    }
                ],
            }
        }
    )
    _serve(monkeypatch, [({"status": "403", "retry-after": "120"}, body)])
    outcome = run_source(gstore, live_settings, "google_calendar", ctx)
    assert outcome.status == "rate_limited" and outcome.retry_after == 120


def test_a_wrong_calendar_id_does_not_stop_the_others(
    monkeypatch, secrets, gstore, live_settings, ctx
) -> None:
    _store_creds(secrets)
    not_found = json.dumps({"error": {"code": 404, "message": "Not Found"}})
    _serve(monkeypatch, [({"status": "404"}, not_found), _page(TEAM, sync="sync-team-1")])
    outcome = run_source(gstore, live_settings, "google_calendar", ctx)
    assert outcome.status == "error"
    assert "calendar not found" in (outcome.error or "") and "primary" in (outcome.error or "")
    assert ("team@example.com", "team1", "") in _events(gstore)
    assert load_cursors(gstore, "google_calendar") == {
        ("events", "team@example.com"): "sync-team-1"
    }


def test_location_and_organizer_self_are_kept() -> None:
    from connectors.google_calendar import event_record

    item = {
        "id": "abc123",
        "status": "confirmed",
        "summary": "Xq7 Blorp",
        "location": "  Hörsaal 3,\n Gebäude B ",
        "organizer": {"email": "me@example.com", "self": True},
        "attendees": [
            {"email": "me@example.com", "self": True, "responseStatus": "accepted"},
            {"email": "ana@example.com", "responseStatus": "needsAction"},
            {"email": "room@resource.calendar.google.com", "resource": True},
        ],
        "start": {"dateTime": "2026-11-20T10:00:00+01:00"},
        "end": {"dateTime": "2026-11-20T11:00:00+01:00"},
    }
    (rec,) = event_record("primary", item, BERLIN)
    assert (rec.location, rec.organized_by_me, rec.attendee_count) == (
        "Hörsaal 3, Gebäude B",
        True,
        2,
    )
    del item["organizer"], item["location"]
    (rec,) = event_record("primary", item, BERLIN)
    assert (rec.location, rec.organized_by_me) == ("", False)
