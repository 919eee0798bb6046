"""Every API response parser against the generated bad-answer corpus (tests/bad_inputs/api.py).

Each case runs the connector's real `pull` (transport mocked: respx for WHOOP and Garmin,
HttpMockSequence for Google, a local server where httplib2's own inflating is under test)
through `bridge.intake.sources.run_source` on the `store` fixture. It must end in one clear line
with nothing stored and the cursors unchanged, or in the bad records skipped and counted
with the good ones kept; never in an exception out of run_source (the daemon's cycle), an
implausible value or overlong text in the store, or memory beyond the bound.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httplib2
import httpx
import pytest
import respx
from googleapiclient.http import HttpMockSequence
from sqlalchemy import select

from bridge.auth.secrets import Secrets
from bridge.config import Settings
from bridge.intake.live import commit, load_cursors
from bridge.intake.sources import get_state, run_source
from bridge.store import Store
from bridge.store.db import utcnow
from bridge.store.models import CalendarEvent, Reading
from connectors import garmin, google_calendar, whoop
from connectors.base import ReadContext
from connectors.live import PullResult
from connectors.validate import EARLIEST, EVENT_TEXT, FUTURE_SLACK, MAX_TITLE, RANGES, READING_TEXT
from tests.bad_inputs import api
from tests.bad_inputs.api import API_CASES, Answer, ApiCase
from tests.bad_inputs.guards import bounded
from tests.conftest import BERLIN
from tests.connectors.live.conftest import _no_real_keyring_no_waiting  # noqa: F401  (autouse)
from tests.connectors.live.whoop_fakes import API as WHOOP_API
from tests.connectors.live.whoop_fakes import store_token

GARMIN_API = "https://personal.connectapi.garmin.com"
NOW = {
    "whoop": datetime(2022, 4, 26, 9, 0, tzinfo=BERLIN),
    "garmin": datetime(2023, 7, 20, 9, 0, tzinfo=BERLIN),
    "google_calendar": datetime(2026, 11, 19, 8, 40, tzinfo=BERLIN),
}
# What an error message must start with: the source, and for WHOOP/Garmin the endpoint.
PREFIX = {"whoop": "whoop /v2/", "garmin": "garmin /", "google_calendar": "google_calendar: "}
GARMIN_KEY = "garmin-personal-api-key-value"
GARMIN_JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJtZSJ9.garmin-signature-bytes"
GOOGLE_TOKEN = {
    "token": "ya29.google-access-token-value",
    "refresh_token": "1//google-refresh-token-value",
    "token_uri": "https://oauth2.googleapis.com/token",
    "client_id": "1234-abc.apps.googleusercontent.com",
    "client_secret": "GOCSPX-google-client-secret-value",
    "scopes": list(google_calendar.SCOPES),
}
SECRET_VALUES = (
    "access-0",
    "refresh-0",
    "whoop-client-secret-value",
    GARMIN_KEY,
    GARMIN_JWT,
    GOOGLE_TOKEN["token"],
    GOOGLE_TOKEN["refresh_token"],
    GOOGLE_TOKEN["client_secret"],
)
ICS = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\nBEGIN:VEVENT\r\nUID:other\r\n"
    "DTSTAMP:20261101T000000Z\r\nDTSTART:20261118T080000Z\r\nDTEND:20261118T090000Z\r\n"
    "SUMMARY:Gym\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)
# Answers are capped at 32 MB (connectors.http.MAX_RESPONSE_BYTES); a few copies of that.
API_MEMORY_BOUND = 100 * 2**20
RAN: Counter[tuple[str, str]] = Counter()


@pytest.fixture
def api_settings(settings: Settings, tmp_path) -> Settings:
    """The `store` fixture's database with the three APIs and one small .ics file enabled."""
    (tmp_path / "other.ics").write_text(ICS)
    doc = settings.model_dump(mode="json")
    doc["sources"]["whoop"].update(enabled=True, client_id="whoop-client-id")
    doc["sources"]["garmin"].update(enabled=True)
    doc["sources"]["google_calendar"].update(enabled=True, calendars=["primary"])
    doc["sources"]["ics"].update(enabled=True, paths=[str(tmp_path / "other.ics")])
    return Settings.model_validate(doc)


def _response(answer: Answer) -> httpx.Response:
    body = answer.body
    content = body if isinstance(body, bytes) else body()
    return httpx.Response(200, headers=answer.headers, content=content)


def _seed(source: str, store: Store, secrets: Secrets, ctx: ReadContext) -> None:
    """Credentials, and the state a previous good pull left: cursors or a stored event."""
    if source == "whoop":
        store_token(secrets)
        cursors = {(s, ""): "2022-04-24T00:00:00.000Z" for s in whoop.STREAMS}
        commit(store, source, PullResult(cursors=cursors), ctx.now)
    elif source == "garmin":
        secrets.set(garmin.KEY_SECRET, GARMIN_KEY)
        secrets.set_json(
            garmin.TOKEN_SECRET, {"access_token": GARMIN_JWT, "expires_at": time.time() + 86400}
        )
        commit(store, source, PullResult(cursors={("daily", ""): "2023-07-19"}), ctx.now)
    else:
        expiry = utcnow() + timedelta(hours=1)
        token = {**GOOGLE_TOKEN, "expiry": expiry.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
        secrets.set_json(google_calendar.TOKEN_SECRET, token)
        event = google_calendar.event_record("primary", api.google_event(), BERLIN)
        commit(store, source, PullResult(records=event), ctx.now)


def _whoop_answer(answers: dict[str, Answer]):
    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/developer")
        if path in answers:
            return _response(answers[path])
        return httpx.Response(200, json=api.whoop_page(path))

    return handler


def _garmin_answer(answers: dict[str, Answer], today: str):
    def handler(request: httpx.Request) -> httpx.Response:
        path, day = request.url.path, request.url.params.get("date")
        for prefix, answer in answers.items():
            if path.startswith(prefix) and day in (None, today):
                return _response(answer)
        if path.startswith(api.HRV):
            return httpx.Response(200, json=api.garmin_hrv())
        if path == api.SUMMARIES:
            return httpx.Response(200, json={"data": [api.garmin_day()]})
        if path == api.DAILY_SLEEP and day == today:
            return httpx.Response(200, json=api.garmin_sleep())
        if path == api.HEART_RATE and day == today:
            return httpx.Response(
                200, json=api.garmin_body("wellness-service_dailyHeartRate_2026-01-07.json")
            )
        return httpx.Response(204)

    return handler


class _Serve(BaseHTTPRequestHandler):
    answer: Answer

    def do_GET(self) -> None:
        body = self.answer.body
        data = body if isinstance(body, bytes) else b"".join(body())
        self.send_response(200)
        for key, value in self.answer.headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def _local_server(answer: Answer) -> Iterator[str]:
    """A 127.0.0.1 server answering every GET with `answer`; yields its base URL."""
    handler = type("Handler", (_Serve,), {"answer": answer})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/calendar/v3/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def serving(case: ApiCase, settings: Settings, monkeypatch: pytest.MonkeyPatch):
    """The case's answers on the source's transport; yields the settings to pull with."""
    answers = case.answers()
    if case.api == "whoop":
        with respx.mock(assert_all_called=False) as mock:
            mock.route(url__startswith=WHOOP_API).mock(side_effect=_whoop_answer(answers))
            yield settings
    elif case.api == "garmin":
        today = NOW["garmin"].date().isoformat()
        with respx.mock(assert_all_called=False) as mock:
            mock.route(url__startswith=GARMIN_API).mock(side_effect=_garmin_answer(answers, today))
            yield settings
    elif not isinstance(answers[api.EVENTS].body, bytes):
        # httplib2 inflates a gzip body itself; HttpMockSequence would skip that step.
        with _local_server(answers[api.EVENTS]) as url:
            doc = settings.model_dump(mode="json")
            doc["sources"]["google_calendar"]["api_base_url"] = url
            yield Settings.model_validate(doc)
    else:
        answer = answers[api.EVENTS]
        mock = HttpMockSequence([({"status": "200", **answer.headers}, answer.body)])
        monkeypatch.setattr(httplib2, "Http", lambda *a, **k: mock)
        yield settings


def _stored(store: Store, source: str) -> tuple[list[Reading], list[CalendarEvent]]:
    with store.session() as session:
        readings = session.execute(select(Reading).where(Reading.source == source)).scalars()
        events = session.execute(
            select(CalendarEvent).where(CalendarEvent.source == source)
        ).scalars()
        return list(readings), list(events)


def _snapshot(store: Store, source: str) -> list[tuple[Any, ...]]:
    readings, events = _stored(store, source)
    return sorted(
        [(r.metric, r.label, r.start_utc.isoformat(), r.value) for r in readings]
        + [(e.uid, e.status, e.title, e.start_utc.isoformat(), 0.0) for e in events]
    )


def _alive(store: Store, source: str) -> set[tuple[Any, ...]]:
    """What identifies each stored record, with an event's status: what must not be lost."""
    readings, events = _stored(store, source)
    return {(r.metric, r.label, r.start_utc) for r in readings} | {
        (e.uid, e.recurrence_id, e.status) for e in events
    }


def _assert_plausible(store: Store, source: str) -> None:
    """Whatever a case left in the store passed the plausibility checks and fits the columns."""
    latest = utcnow() + FUTURE_SLACK
    readings, events = _stored(store, source)
    for r in readings:
        assert EARLIEST <= r.start_utc <= latest, r
        if r.value is not None:
            lo, hi = RANGES.get(r.metric, (-math.inf, math.inf))
            assert math.isfinite(r.value) and lo <= r.value <= hi, r
        assert all(len(getattr(r, k)) <= n for k, n in READING_TEXT.items()), r.metric
    for e in events:
        assert EARLIEST <= e.start_utc <= utcnow() + timedelta(days=3660), e.uid
        assert len(e.title) <= MAX_TITLE
        assert all(len(getattr(e, k)) <= n for k, n in EVENT_TEXT.items()), e.uid
        assert isinstance(e.status, str) and isinstance(e.event_type, str)


@pytest.mark.parametrize("case", API_CASES, ids=lambda c: f"{c.api}/{c.name}")
def test_bad_answer(case, store, api_settings, monkeypatch, caplog):
    source = case.api
    ctx = ReadContext(tz=BERLIN, now=NOW[source])
    _seed(source, store, Secrets.from_settings(api_settings), ctx)
    cursors, rows = load_cursors(store, source), _snapshot(store, source)
    alive = _alive(store, source)
    with serving(case, api_settings, monkeypatch) as settings, bounded(API_MEMORY_BOUND):
        outcome = run_source(store, settings, source, ctx)
    skipped = [r.getMessage() for r in caplog.records if "skipped as unreadable" in r.getMessage()]
    if case.expect == "error":
        message = outcome.error or ""
        assert outcome.status == "error", message
        assert message.startswith(PREFIX[source]) and "next sync" in message, message
        assert "\n" not in message and "Traceback" not in message
        assert not any(secret in message for secret in SECRET_VALUES)
        assert get_state(store, source).last_error == message
        assert load_cursors(store, source) == cursors, "a cursor moved without its data"
        assert _snapshot(store, source) == rows, "something was stored or cancelled"
    else:
        assert outcome.status == "ok", outcome.error
        assert outcome.records >= 1, "the good records must be kept"
        assert alive <= _alive(store, source), "a stored record was lost or cancelled"
        if case.expect == "skip":
            assert outcome.skipped >= 1 and "skipped as unreadable" in outcome.line()
            assert len(skipped) == 1 and skipped[0].startswith(f"{source}: "), skipped
        else:
            assert outcome.skipped == 0 and not skipped, skipped
    _assert_plausible(store, source)
    for cursor in load_cursors(store, source).values():
        if cursor and cursor[:1].isdigit():  # WHOOP's instants, Garmin's days; not sync tokens
            assert EARLIEST.date() <= date.fromisoformat(cursor[:10]) <= utcnow().date(), cursor
    # The daemon goes on: the next source of the same cycle syncs as usual.
    other = run_source(store, api_settings, "ics", ReadContext(BERLIN, NOW["google_calendar"]))
    assert other.status == "ok" and other.records == 1, other.error
    RAN[(source, case.expect)] += 1


def test_zz_summary(capsys):
    # Runs after the cases (pytest keeps file order); says how many ran, with the file corpus.
    from tests.bad_inputs.test_files import RAN as FILES_RAN

    by_api = Counter({source: 0 for source in NOW})
    by_outcome: Counter[str] = Counter()
    for (source, expect), count in RAN.items():
        by_api[source] += count
        by_outcome[expect] += count
    ran, files = sum(RAN.values()), sum(FILES_RAN.values())
    with capsys.disabled():
        print(
            f"\nbad-answer corpus: {ran} of {len(API_CASES)} API cases passed "
            f"({', '.join(f'{k} {v}' for k, v in by_api.items())}; "
            f"{by_outcome['error']} rejected with one line, {by_outcome['skip']} stored with "
            f"skips, {by_outcome['accept']} odd but valid)\n"
            f"bad-input corpus, all parsers: {files + ran} cases passed "
            f"({files} file, {ran} API)"
        )
    assert len(API_CASES) >= 36 and {c.api for c in API_CASES} == set(NOW)
