"""WHOOP v2: the spec contract, paging, re-scoring, rate limits and rotating refresh tokens."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest
import respx
from sqlalchemy import select

from bridge.auth.secrets import Secrets
from bridge.config import Settings
from bridge.intake.live import load_cursors
from bridge.intake.sources import get_state, is_due, run_source
from bridge.store import Store
from bridge.store.models import Reading
from connectors.base import ReadContext
from connectors.http import RetryPolicy
from connectors.whoop import TOKEN_SECRET, WhoopTokens
from tests.conftest import BERLIN
from tests.connectors.live.whoop_fakes import (
    API,
    COLLECTIONS,
    TOKEN_URL,
    FakeWhoop,
    record_example,
    store_token,
)

NOW = datetime(2022, 4, 26, 9, 0, tzinfo=BERLIN)


@pytest.fixture
def ctx() -> ReadContext:
    return ReadContext(tz=BERLIN, now=NOW)


@pytest.fixture
def wstore(live_settings: Settings):
    s = Store(live_settings.database_url)
    yield s
    s.dispose()


def _readings(store: Store) -> list[tuple[str, str, float | None]]:
    with store.session() as session:
        rows = session.execute(select(Reading).where(Reading.source == "whoop")).scalars()
        return sorted((r.metric, r.label, r.value) for r in rows)


def test_every_request_follows_the_spec_and_its_examples_parse(
    live_settings: Settings, secrets: Secrets, wstore: Store, ctx: ReadContext
) -> None:
    store_token(secrets)
    fake = FakeWhoop()
    with respx.mock(assert_all_called=False) as mock:
        mock.route(url__startswith=API).mock(side_effect=fake)
        outcome = run_source(wstore, live_settings, "whoop", ctx)
    assert outcome.status == "ok", outcome.error
    # four collections, two pages each (the second reached through nextToken)
    assert len(fake.seen) == 8
    assert sum("nextToken=page1" in str(r.url) for r in fake.seen) == 4
    got = _readings(wstore)
    metrics = {m for m, _, _ in got}
    assert metrics == {
        "recovery",
        "hrv_rmssd",
        "resting_hr",
        "sleep",
        "sleep_score",
        "respiratory_rate",
        "heart_rate",
        "workout",
    }
    # the spec's sleep example: light -> core, slow wave -> deep, minutes
    sleep = {label: value for m, label, value in got if m == "sleep"}
    assert set(sleep) == {"in_bed", "deep", "core", "rem", "awake"}
    assert sleep["deep"] == pytest.approx(6630370 / 60000)
    assert sleep["core"] == pytest.approx(14905851 / 60000)
    assert ("hrv_rmssd", "", 31.813562) in got
    assert any(m == "workout" and label == "running" for m, label, _ in got)
    cursors = load_cursors(wstore, "whoop")
    assert set(cursors) == {(s, "") for s in ("cycle", "sleep", "recovery", "workout")}
    # idempotent: the same pull again adds nothing
    with respx.mock(assert_all_called=False) as mock:
        mock.route(url__startswith=API).mock(side_effect=FakeWhoop())
        again = run_source(wstore, live_settings, "whoop", ctx)
    assert again.status == "ok" and again.new == 0 and _readings(wstore) == got


def test_pending_score_is_fetched_again_until_scored(
    live_settings: Settings, secrets: Secrets, wstore: Store, ctx: ReadContext
) -> None:
    store_token(secrets)
    pending = {**record_example("/v2/activity/sleep"), "score_state": "PENDING_SCORE"}
    pending.pop("score")
    first = FakeWhoop({"/v2/activity/sleep": [[pending]]})
    with respx.mock(assert_all_called=False) as mock:
        mock.route(url__startswith=API).mock(side_effect=first)
        assert run_source(wstore, live_settings, "whoop", ctx).status == "ok"
    assert not [r for r in _readings(wstore) if r[0] == "sleep"]
    assert load_cursors(wstore, "whoop")[("sleep", "")] == "2022-04-24T02:25:44.774Z"
    # ten days later, far beyond the re-fetch window: the pending sleep is still asked for
    later = ReadContext(tz=BERLIN, now=NOW + timedelta(days=10))
    scored = record_example("/v2/activity/sleep")
    second = FakeWhoop({"/v2/activity/sleep": [[scored]]})
    with respx.mock(assert_all_called=False) as mock:
        mock.route(url__startswith=API).mock(side_effect=second)
        assert run_source(wstore, live_settings, "whoop", later).status == "ok"
    sleep_req = next(r for r in second.seen if r.url.path.endswith("/activity/sleep"))
    start = parse_qs(sleep_req.url.query.decode())["start"][0]
    assert start <= "2022-04-24T02:25:44.774Z"
    assert {r[1] for r in _readings(wstore) if r[0] == "sleep"} >= {"deep", "core", "rem"}


def test_short_429_is_waited_out_long_one_defers_the_source(
    live_settings: Settings,
    secrets: Secrets,
    wstore: Store,
    ctx: ReadContext,
    _no_real_keyring_no_waiting: list[float],
) -> None:
    store_token(secrets)
    fake = FakeWhoop()
    answers = iter([httpx.Response(429, headers={"Retry-After": "7"})])

    def maybe_limited(request: httpx.Request) -> httpx.Response:
        return next(answers, None) or fake(request)

    with respx.mock(assert_all_called=False) as mock:
        mock.route(url__startswith=API).mock(side_effect=maybe_limited)
        assert run_source(wstore, live_settings, "whoop", ctx).status == "ok"
    assert 7.0 in _no_real_keyring_no_waiting
    with respx.mock(assert_all_called=False) as mock:
        mock.route(url__startswith=API).mock(
            return_value=httpx.Response(429, headers={"X-RateLimit-Reset": "3600"})
        )
        outcome = run_source(wstore, live_settings, "whoop", ctx)
    assert outcome.status == "rate_limited"
    state = get_state(wstore, "whoop")
    assert state is not None and state.retry_after is not None
    assert state.retry_after >= ctx.now + timedelta(seconds=3599)
    assert not is_due(wstore, live_settings, "whoop", ctx.now + timedelta(minutes=59))


def test_server_errors_and_network_failures_are_retried_a_bounded_number_of_times(
    live_settings: Settings,
    secrets: Secrets,
    wstore: Store,
    ctx: ReadContext,
    _no_real_keyring_no_waiting: list[float],
) -> None:
    store_token(secrets)
    fake = FakeWhoop()
    failures = iter([httpx.Response(502), httpx.ConnectError("boom")])

    def flaky(request: httpx.Request) -> httpx.Response:
        nxt = next(failures, None)
        if isinstance(nxt, Exception):
            raise nxt
        return nxt or fake(request)

    with respx.mock(assert_all_called=False) as mock:
        mock.route(url__startswith=API).mock(side_effect=flaky)
        assert run_source(wstore, live_settings, "whoop", ctx).status == "ok"
    assert len(_no_real_keyring_no_waiting) == 2
    with respx.mock(assert_all_called=False) as mock:
        route = mock.route(url__startswith=API).mock(return_value=httpx.Response(503))
        outcome = run_source(wstore, live_settings, "whoop", ctx)
    assert outcome.status == "error" and "gave up after 4 attempts" in (outcome.error or "")
    assert route.call_count == 4


def _token_endpoint(valid: set[str], issued: list[str]):
    """A rotating token endpoint: each refresh token works once and yields a new pair."""

    def answer(request: httpx.Request) -> httpx.Response:
        form = parse_qs(request.content.decode())
        assert form["client_secret"] == ["whoop-client-secret-value"]
        assert form["scope"] == ["offline"]
        old = form["refresh_token"][0]
        if old not in valid:
            return httpx.Response(400, json={"error": "invalid_grant"})
        valid.discard(old)
        n = len(issued) + 1
        issued.append(f"refresh-{n}")
        valid.add(f"refresh-{n}")
        time.sleep(0.05)  # widen the window a second refresher would race into
        return httpx.Response(
            200,
            json={
                "access_token": f"access-{n}",
                "refresh_token": f"refresh-{n}",
                "expires_in": 3600,
                "scope": "offline",
                "token_type": "bearer",
            },
        )

    return answer


def test_rotated_refresh_token_is_saved_before_the_access_token_is_used(
    live_settings: Settings, secrets: Secrets, wstore: Store, ctx: ReadContext
) -> None:
    store_token(secrets, expires_in=-10)
    valid, issued = {"refresh-0"}, []
    fake = FakeWhoop()
    fake.valid_access = {"access-1"}
    stored_when_used: list[str] = []

    def api(request: httpx.Request) -> httpx.Response:
        stored_when_used.append((secrets.get_json(TOKEN_SECRET) or {})["refresh_token"])
        return fake(request)

    with respx.mock(assert_all_called=False) as mock:
        mock.post(TOKEN_URL).mock(side_effect=_token_endpoint(valid, issued))
        mock.route(url__startswith=API).mock(side_effect=api)
        assert run_source(wstore, live_settings, "whoop", ctx).status == "ok"
    assert issued == ["refresh-1"]
    assert set(stored_when_used) == {"refresh-1"}


def test_concurrent_refreshes_spend_the_refresh_token_once(
    live_settings: Settings, secrets: Secrets
) -> None:
    store_token(secrets, expires_in=-10)
    valid, issued = {"refresh-0"}, []
    results: list[str] = []
    with respx.mock(assert_all_called=False) as mock:
        mock.post(TOKEN_URL).mock(side_effect=_token_endpoint(valid, issued))

        def worker() -> None:
            with httpx.Client() as client:
                tokens = WhoopTokens(live_settings, Secrets(secrets.backend), client, RetryPolicy())
                results.append(tokens.access_token())

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert issued == ["refresh-1"]
    assert results == ["access-1"] * 4


class _Killed(BaseException):
    """Stands in for the process dying (SIGKILL, power loss) at an exact point."""


def test_process_dying_between_refresh_and_save_loses_no_data_and_asks_for_reauth(
    live_settings: Settings,
    secrets: Secrets,
    wstore: Store,
    ctx: ReadContext,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A first good pull stores data and cursors.
    store_token(secrets)
    with respx.mock(assert_all_called=False) as mock:
        mock.route(url__startswith=API).mock(side_effect=FakeWhoop())
        assert run_source(wstore, live_settings, "whoop", ctx).status == "ok"
    before, cursors_before = _readings(wstore), load_cursors(wstore, "whoop")
    # The access token expires; WHOOP rotates on refresh, and the process dies before saving.
    store_token(secrets, expires_in=-10)
    valid, issued = {"refresh-0"}, []
    real_set_json = Secrets.set_json

    def die(self: Secrets, name: str, value: dict[str, Any]) -> None:
        raise _Killed

    monkeypatch.setattr(Secrets, "set_json", die)
    later = ReadContext(tz=BERLIN, now=NOW + timedelta(hours=2))
    with respx.mock(assert_all_called=False) as mock:
        mock.post(TOKEN_URL).mock(side_effect=_token_endpoint(valid, issued))
        mock.route(url__startswith=API).mock(side_effect=FakeWhoop())
        with pytest.raises(_Killed):
            run_source(wstore, live_settings, "whoop", later)
    monkeypatch.setattr(Secrets, "set_json", real_set_json)
    assert issued == ["refresh-1"] and "refresh-0" not in valid  # spent on WHOOP's side
    # Restart: the stored refresh token is the spent one. No crash: reauth_required.
    restarted = Secrets.from_settings(live_settings)
    assert (restarted.get_json(TOKEN_SECRET) or {})["refresh_token"] == "refresh-0"
    with respx.mock(assert_all_called=False) as mock:
        mock.post(TOKEN_URL).mock(side_effect=_token_endpoint(valid, issued))
        outcome = run_source(wstore, live_settings, "whoop", later)
    assert outcome.status == "reauth_required"
    assert "run `rhythm-bridge auth whoop`" in (outcome.error or "")
    state = get_state(wstore, "whoop")
    assert state is not None and state.status == "reauth_required"
    assert not is_due(wstore, live_settings, "whoop", later.now + timedelta(days=1))
    assert _readings(wstore) == before and load_cursors(wstore, "whoop") == cursors_before


def test_revoked_access_is_reauth_required(
    live_settings: Settings, secrets: Secrets, wstore: Store, ctx: ReadContext
) -> None:
    store_token(secrets)
    with respx.mock(assert_all_called=False) as mock:
        mock.post(TOKEN_URL).mock(return_value=httpx.Response(401, json={"error": "revoked"}))
        mock.route(url__startswith=API).mock(return_value=httpx.Response(401))
        outcome = run_source(wstore, live_settings, "whoop", ctx)
    assert outcome.status == "reauth_required"


def test_all_collections_are_known_to_the_spec() -> None:
    from connectors.whoop import STREAMS

    assert set(STREAMS.values()) == set(COLLECTIONS)


def test_since_backfills_from_that_date_whatever_the_cursor(
    live_settings: Settings, secrets: Secrets, wstore: Store, ctx: ReadContext
) -> None:
    store_token(secrets)
    with respx.mock(assert_all_called=False) as mock:
        mock.route(url__startswith=API).mock(side_effect=FakeWhoop())
        run_source(wstore, live_settings, "whoop", ctx)
    fake = FakeWhoop()
    with respx.mock(assert_all_called=False) as mock:
        mock.route(url__startswith=API).mock(side_effect=fake)
        since = datetime(2022, 1, 1, tzinfo=BERLIN)
        assert run_source(wstore, live_settings, "whoop", ctx, since=since).status == "ok"
    starts = {r.url.path: parse_qs(r.url.query.decode())["start"][0] for r in fake.seen}
    # Sleep from a day earlier, so the recoveries fetched find their sleeps.
    assert starts.pop("/developer/v2/activity/sleep") == "2021-12-30T23:00:00.000Z"
    assert set(starts.values()) == {"2021-12-31T23:00:00.000Z"}


def test_a_malformed_record_is_skipped_not_fatal(
    live_settings: Settings,
    secrets: Secrets,
    wstore: Store,
    ctx: ReadContext,
    caplog: pytest.LogCaptureFixture,
) -> None:
    store_token(secrets)
    broken = {**record_example("/v2/activity/workout")}
    broken.pop("start")
    good = record_example("/v2/activity/workout")
    fake = FakeWhoop({"/v2/activity/workout": [[broken, good]]})
    with respx.mock(assert_all_called=False) as mock:
        mock.route(url__startswith=API).mock(side_effect=fake)
        assert run_source(wstore, live_settings, "whoop", ctx).status == "ok"
    assert [m for m, _, _ in _readings(wstore)] == ["workout"]
    assert "whoop API: skipping unreadable workout record" in caplog.text
    assert "whoop: 1 record skipped as unreadable or implausible (workout 1)" in caplog.text


def test_a_recovery_keeps_its_wake_up_time_when_its_sleep_falls_outside_the_window(
    live_settings: Settings, secrets: Secrets, wstore: Store
) -> None:
    # Found by benchmarks/soak.py: a later pull re-fetched a recovery (made at wake-up,
    # inside the 3-day window) without its sleep (started the evening before, outside),
    # dated it at created_at instead, and stored the same morning's HRV and RHR twice.
    from tests.fake_apis import FakeAPIs, provider_settings

    first = datetime(2026, 10, 12, 6, 0, tzinfo=BERLIN)
    with FakeAPIs(now=first) as fake:
        settings = live_settings.model_copy(
            update={
                "sources": live_settings.sources.model_validate(
                    {"whoop": provider_settings(fake.url)["whoop"]}
                )
            }
        )
        store_token(secrets, expires_in=-1, refresh="whoop-refresh-0")
        for days in (0, 1, 2):
            fake.fixed_now = first + timedelta(days=days)
            ctx = ReadContext(tz=BERLIN, now=fake.fixed_now)
            assert run_source(wstore, settings, "whoop", ctx).status == "ok"
    with wstore.session() as session:
        mornings = (
            session.execute(
                select(Reading.start_utc).where(Reading.metric == "hrv_rmssd").order_by("start_utc")
            )
            .scalars()
            .all()
        )
    assert len(mornings) >= 30
    gaps = [b - a for a, b in pairwise(mornings)]
    assert min(gaps) > timedelta(hours=12), "one HRV reading per wake-up"
