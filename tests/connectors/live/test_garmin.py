"""Garmin Personal API with respx and the real response bodies in ../shared/fixtures/garmin."""

from __future__ import annotations

import json
import time
from datetime import date, datetime, timedelta
from typing import Any

import httpx
import pytest
import respx
from sqlalchemy import select

from bridge.config import Settings
from bridge.intake.live import load_cursors
from bridge.intake.sources import get_state, is_due, run_source
from bridge.store import Store
from bridge.store.models import Reading
from connectors.base import ReadContext
from connectors.garmin import KEY_SECRET, TOKEN_SECRET, ranges
from tests.conftest import BERLIN
from tests.fake_apis import garmin_jwt
from tests.shared import shared_path

API = "https://personal.connectapi.garmin.com"
TOKEN_URL = f"{API}/personalapitoken-service/personal-api/personal-api-key/token"
BODIES = shared_path("garmin", "connect_api")
NOW = datetime(2023, 7, 20, 9, 0, tzinfo=BERLIN)
API_KEY = "garmin-personal-api-key-value"


def _body(name: str) -> Any:
    return json.loads((BODIES / name).read_text())


class FakeGarmin:
    def __init__(self) -> None:
        self.seen: list[httpx.Request] = []
        self.exchanges = 0
        self.token = garmin_jwt(time.time() + 24 * 3600)

    def exchange(self, request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == f"ApiKey {API_KEY}"
        self.exchanges += 1
        return httpx.Response(200, text=self.token)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        assert request.headers["authorization"] == f"Bearer {self.token}"
        path, params = request.url.path, dict(request.url.params)
        if path.startswith("/hrv-service/hrv/daily/"):
            lo, hi = (date.fromisoformat(p) for p in path.rsplit("/", 2)[1:])
            assert (hi - lo).days < 28
            return httpx.Response(
                200, json=_body("hrv-service_hrv_daily_2023-07-01_2023-07-20.json")
            )
        if path == "/usersummary-service/v2/dailysummaries":
            lo, hi = date.fromisoformat(params["startDate"]), date.fromisoformat(params["endDate"])
            assert (hi - lo).days < 28
            return httpx.Response(
                200, json={"data": [_body("usersummary-service_daily_2025-06-14.json")]}
            )
        if path == "/sleep-service/sleep/dailySleep":
            if params["date"] == "2023-07-20":
                return httpx.Response(
                    200, json=_body("wellness-service_dailySleepData_2021-07-20.json")
                )
            return httpx.Response(204)
        if path == "/wellness-service/wellness/dailyHeartRate":
            if params["date"] == "2023-07-19":
                return httpx.Response(
                    200, json=_body("wellness-service_dailyHeartRate_2026-01-07.json")
                )
            return httpx.Response(204)
        return httpx.Response(404)


@pytest.fixture
def gstore(live_settings: Settings):
    s = Store(live_settings.database_url)
    yield s
    s.dispose()


def _pull(live_settings, gstore, fake, now=NOW, since=None):
    with respx.mock(assert_all_called=False) as mock:
        mock.post(TOKEN_URL).mock(side_effect=fake.exchange)
        mock.route(url__startswith=API).mock(side_effect=fake)
        return run_source(
            gstore, live_settings, "garmin", ReadContext(tz=BERLIN, now=now), since=since
        )


def _by_metric(store: Store) -> dict[str, list[Reading]]:
    out: dict[str, list[Reading]] = {}
    with store.session() as session:
        for r in session.execute(select(Reading).where(Reading.source == "garmin")).scalars():
            out.setdefault(r.metric, []).append(r)
    return out


def test_pull_normalizes_the_real_bodies(live_settings, secrets, gstore) -> None:
    secrets.set(KEY_SECRET, API_KEY)
    fake = FakeGarmin()
    outcome = _pull(live_settings, gstore, fake, since=datetime(2023, 7, 1, tzinfo=BERLIN))
    assert outcome.status == "ok", outcome.error
    assert fake.exchanges == 1
    got = _by_metric(gstore)
    assert set(got) == {
        "hrv_rmssd",
        "sleep",
        "respiratory_rate",
        "resting_hr",
        "stress",
        "body_battery",
        "steps",
        "heart_rate",
    }
    hrv = {r.start_utc.date(): r.value for r in got["hrv_rmssd"]}
    assert len(hrv) == 20 and hrv[date(2023, 6, 30)] == 43  # 2023-07-01 00:00 Berlin
    stages = {r.label: r.value for r in got["sleep"]}
    assert stages == {"in_bed": 459, "deep": 74, "core": 312, "rem": 43, "awake": 30}
    asleep_night = next(r for r in got["sleep"] if r.label == "in_bed")
    assert asleep_night.utc_offset_min == -300  # from the Local/GMT pair, not the person's zone
    assert [r.value for r in got["steps"]] == [5459]
    assert [r.value for r in got["resting_hr"]] == [51]
    assert [r.value for r in got["stress"]] == [24]
    assert {r.label: r.value for r in got["body_battery"]} == {
        "at_wake": 92,
        "highest": 92,
        "lowest": 32,
    }
    assert len(got["heart_rate"]) > 100
    assert load_cursors(gstore, "garmin") == {("daily", ""): "2023-07-20"}
    # The bearer token is cached: the next pull does not use the API key again.
    again = _pull(live_settings, gstore, fake)
    assert again.status == "ok" and again.new == 0 and fake.exchanges == 1


def test_incremental_pull_rereads_only_the_trailing_days(live_settings, secrets, gstore) -> None:
    secrets.set(KEY_SECRET, API_KEY)
    fake = FakeGarmin()
    _pull(live_settings, gstore, fake, since=datetime(2023, 7, 1, tzinfo=BERLIN))
    fake.seen.clear()
    _pull(live_settings, gstore, fake, now=NOW + timedelta(days=1))
    days = {r.url.params["date"] for r in fake.seen if "date" in r.url.params}
    assert days == {"2023-07-18", "2023-07-19", "2023-07-20", "2023-07-21"}


def test_long_backfill_is_split_into_bounded_ranges() -> None:
    chunks = list(ranges(date(2023, 1, 1), date(2023, 3, 31), 28))
    assert chunks[0] == (date(2023, 1, 1), date(2023, 1, 28))
    assert chunks[-1][1] == date(2023, 3, 31)
    assert all((hi - lo).days < 28 for lo, hi in chunks)
    assert sum((hi - lo).days + 1 for lo, hi in chunks) == 90


def test_429_pauses_the_source_for_hours(live_settings, secrets, gstore) -> None:
    secrets.set(KEY_SECRET, API_KEY)
    fake = FakeGarmin()
    with respx.mock(assert_all_called=False) as mock:
        mock.post(TOKEN_URL).mock(side_effect=fake.exchange)
        route = mock.route(url__startswith=API).mock(
            return_value=httpx.Response(429, headers={"Retry-After": "14"})
        )
        outcome = run_source(gstore, live_settings, "garmin", ReadContext(tz=BERLIN, now=NOW))
    assert outcome.status == "rate_limited" and route.call_count == 1
    state = get_state(gstore, "garmin")
    assert state is not None and state.retry_after is not None
    assert state.retry_after >= NOW + timedelta(hours=2) - timedelta(seconds=1)
    assert not is_due(gstore, live_settings, "garmin", NOW + timedelta(hours=1, minutes=59))


def test_refused_key_is_reauth_required(live_settings, secrets, gstore) -> None:
    secrets.set(KEY_SECRET, API_KEY)
    with respx.mock(assert_all_called=False) as mock:
        mock.post(TOKEN_URL).mock(return_value=httpx.Response(401, text="expired"))
        outcome = run_source(gstore, live_settings, "garmin", ReadContext(tz=BERLIN, now=NOW))
    assert outcome.status == "reauth_required"
    assert "rhythm-bridge auth garmin" in (outcome.error or "")


def test_expired_bearer_token_is_renewed_with_the_key(live_settings, secrets, gstore) -> None:
    secrets.set(KEY_SECRET, API_KEY)
    secrets.set_json(TOKEN_SECRET, {"access_token": "old", "expires_at": time.time() + 60})
    fake = FakeGarmin()
    assert _pull(live_settings, gstore, fake).status == "ok"
    assert fake.exchanges == 1
    assert (secrets.get_json(TOKEN_SECRET) or {})["access_token"] == fake.token


def test_a_token_answer_that_is_no_token_is_refused_not_stored(
    live_settings, secrets, gstore
) -> None:
    secrets.set(KEY_SECRET, API_KEY)
    secrets.set_json(TOKEN_SECRET, {"access_token": "old", "expires_at": time.time() + 60})
    fake = FakeGarmin()
    fake.token = "<html>\n<body>Sign in to the hotel Wi-Fi</body>\n</html>"
    outcome = _pull(live_settings, gstore, fake)
    assert outcome.status == "error" and "\n" not in (outcome.error or "")
    assert "garmin token endpoint answered something that is not a token" in (outcome.error or "")
    assert (secrets.get_json(TOKEN_SECRET) or {})["access_token"] == "old"
