"""Reschedule proposes the next free window; accepted and proposed windows in an .ics feed.

The feed is fetched over real HTTP from the web server running on 127.0.0.1 and read
with the `icalendar` package, the way a subscribing calendar client would.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import httpx
import icalendar
import pytest
from typer.testing import CliRunner

from bridge.auth.feed import ensure_feed_token, revoke_feed_token
from bridge.cli.main import app
from bridge.cycle.answer import answer
from bridge.cycle.recommend import min_minutes, recommend
from bridge.intake.ingest import import_file
from bridge.store.models import Feedback, Recommendation
from bridge.web.server import BackgroundServer
from connectors.base import ReadContext
from tests.conftest import BERLIN
from tests.cycle.test_windows import BUSY_WEEK, ICS, at, overlaps
from tests.helpers import write_config


@pytest.fixture
def week(store):
    import_file(store, "ics", ICS, ReadContext(tz=BERLIN, now=at(2026, 11, 22, 12, 0)))
    return store


def test_reschedule_proposes_the_next_free_window_for_the_same_action(week, settings):
    rec = recommend(week, settings, at(2026, 11, 24, 5, 5), runner_name="heuristic")
    fb, created, proposal = answer(week, settings, rec.id, "reschedule", at(2026, 11, 24, 5, 6))
    assert created and fb.response == "rescheduled" and fb.reward == -1.0
    assert proposal is not None and proposal.action == rec.action
    assert proposal.rescheduled_from == rec.id
    assert (proposal.local_date, proposal.slot) > (rec.local_date, rec.slot)
    w = (proposal.window_start, proposal.window_end)
    assert not any(overlaps(w, b) for b in BUSY_WEEK)
    assert w[1] - w[0] >= timedelta(minutes=min_minutes(settings)[rec.action])
    # Tuesday afternoon is the tentative workshop: the proposal skips it.
    assert proposal.slot != 1 or proposal.local_date != rec.local_date
    assert proposal.window_start <= at(2026, 11, 26, 5, 0)  # today or tomorrow
    # Answering again changes nothing and proposes nothing new.
    _, created2, again = answer(week, settings, rec.id, "reschedule", at(2026, 11, 24, 5, 7))
    assert not created2 and again.id == proposal.id
    assert week.count(Recommendation) == 2
    # When the proposed slot comes, the cycle keeps the proposal as that slot's recommendation.
    start = proposal.window_start.astimezone(BERLIN)
    assert recommend(week, settings, start - timedelta(minutes=1)).id == proposal.id


def test_no_free_window_today_or_tomorrow_proposes_nothing(week, settings):
    # A minimum longer than any slot: no window today or tomorrow, whatever the calendar.
    long = settings.model_copy(
        update={"windows": settings.windows.model_copy(update={"min_minutes": {"SLEEP": 1000}})}
    )
    rec = recommend(week, settings, at(2026, 11, 26, 22, 5), runner_name="heuristic")
    with week.transaction() as s:
        s.get(Recommendation, rec.id).action = "SLEEP"
    _, _, proposal = answer(week, long, rec.id, "reschedule", at(2026, 11, 26, 22, 6))
    assert proposal is None
    assert week.count(Feedback) == 1


def fetch(url: str, **headers: str) -> httpx.Response:
    return httpx.get(url, headers=headers, timeout=10)


def test_the_feed_serves_accepted_and_proposed_windows_to_a_calendar_client(
    week, settings, memory_keyring
):
    accepted = recommend(week, settings, at(2026, 11, 23, 5, 5), runner_name="heuristic")
    answer(week, settings, accepted.id, "accept", at(2026, 11, 23, 5, 6))
    ignored = recommend(week, settings, at(2026, 11, 23, 17, 5), runner_name="heuristic")
    answer(week, settings, ignored.id, "ignore", at(2026, 11, 23, 17, 6))
    moved = recommend(week, settings, at(2026, 11, 24, 5, 5), runner_name="heuristic")
    _, _, proposal = answer(week, settings, moved.id, "reschedule", at(2026, 11, 24, 5, 6))
    token = ensure_feed_token(settings)
    clock = lambda: at(2026, 11, 24, 5, 10)  # noqa: E731
    with BackgroundServer(settings, week, host="127.0.0.1", port=0, clock=clock) as srv:
        url = f"{srv.url}/calendar/{token}.ics"
        first = fetch(url)
        assert first.status_code == 200
        assert first.headers["content-type"] == "text/calendar; charset=utf-8"
        assert b"\r\n" in first.content and first.content.startswith(b"BEGIN:VCALENDAR\r\n")
        cal = icalendar.Calendar.from_ical(first.content)
        assert str(cal["VERSION"]) == "2.0" and str(cal["METHOD"]) == "PUBLISH"
        assert str(cal["X-WR-CALNAME"]) == "rhythm-bridge" and cal["PRODID"]
        events = {str(e["UID"]): e for e in cal.walk("VEVENT")}
        assert set(events) == {
            f"rb-rec-{accepted.id}@rhythm-bridge.invalid",
            f"rb-rec-{proposal.id}@rhythm-bridge.invalid",
        }
        ok = events[f"rb-rec-{accepted.id}@rhythm-bridge.invalid"]
        assert ok.decoded("DTSTART") == accepted.window_start
        assert ok.decoded("DTEND") == accepted.window_end
        assert str(ok["STATUS"]) == "CONFIRMED" and "DTSTAMP" in ok
        assert str(events[f"rb-rec-{proposal.id}@rhythm-bridge.invalid"]["STATUS"]) == "TENTATIVE"
        # Nothing about the person beyond the action and its time.
        assert accepted.rationale.encode() not in first.content
        # A second fetch is byte-identical (stable UIDs and DTSTAMPs) and can be a 304.
        assert fetch(url).content == first.content
        cached = fetch(url, **{"If-None-Match": first.headers["etag"]})
        assert cached.status_code == 304 and not cached.content
        # Ignoring the proposal takes it out of the feed; the UID of the rest stays.
        answer(week, settings, proposal.id, "ignore", at(2026, 11, 24, 5, 12))
        after = icalendar.Calendar.from_ical(fetch(url).content)
        assert [str(e["UID"]) for e in after.walk("VEVENT")] == [
            f"rb-rec-{accepted.id}@rhythm-bridge.invalid"
        ]
        # A wrong token, a rotated one and a revoked one all get a plain 404.
        assert fetch(f"{srv.url}/calendar/{token[:-1]}x.ics").status_code == 404
        new = ensure_feed_token(settings, rotate=True)
        assert fetch(url).status_code == 404
        assert fetch(f"{srv.url}/calendar/{new}.ics").status_code == 200
        revoke_feed_token(settings)
        assert fetch(f"{srv.url}/calendar/{new}.ics").status_code == 404


def test_the_feed_token_does_not_open_the_page_when_a_token_is_required(
    week, settings, memory_keyring
):
    from starlette.testclient import TestClient

    from bridge.web.app import create_app

    token = ensure_feed_token(settings)
    app_ = create_app(settings, week, host="0.0.0.0", clock=lambda: at(2026, 11, 24, 5, 10))
    c = TestClient(app_, base_url="http://192.168.1.20:8765", follow_redirects=False)
    assert c.get(f"/calendar/{token}.ics").status_code == 200
    r = c.get("/api/recommendation", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 401


def test_the_cli_prints_rotates_and_revokes_the_feed_link(tmp_path, memory_keyring, monkeypatch):
    cfg = write_config(tmp_path / "config.toml", tmp_path / "data")
    monkeypatch.setenv("RHYTHM_BRIDGE_CONFIG", str(cfg))
    cli = CliRunner()
    first = cli.invoke(app, ["calendar-feed"])
    assert first.exit_code == 0, first.output
    link = first.stdout.strip()
    assert link.startswith("http://127.0.0.1:8765/calendar/") and link.endswith(".ics")
    assert cli.invoke(app, ["calendar-feed"]).stdout.strip() == link
    rotated = cli.invoke(app, ["calendar-feed", "--rotate"]).stdout.strip()
    assert rotated != link and len(rotated.rsplit("/", 1)[1]) >= 40
    revoked = cli.invoke(app, ["calendar-feed", "--revoke"])
    assert revoked.exit_code == 0 and "404" in revoked.output


def test_a_loopback_feed_link_says_no_calendar_service_can_reach_it(
    tmp_path, memory_keyring, monkeypatch
):
    cfg = write_config(tmp_path / "config.toml", tmp_path / "data")
    monkeypatch.setenv("RHYTHM_BRIDGE_CONFIG", str(cfg))
    result = CliRunner().invoke(app, ["calendar-feed"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("http://127.0.0.1:8765/calendar/")
    assert "cannot reach this link" in result.stderr and "callback_url" in result.stderr
    reachable = write_config(
        tmp_path / "public.toml",
        tmp_path / "data",
        notify='[notify]\ncallback_url = "https://bridge.example.org"',
    )
    monkeypatch.setenv("RHYTHM_BRIDGE_CONFIG", str(reachable))
    result = CliRunner().invoke(app, ["calendar-feed"])
    assert result.stdout.startswith("https://bridge.example.org/calendar/")
    assert result.stderr == ""


def test_the_api_and_the_page_show_the_proposed_window(week, settings):
    from starlette.testclient import TestClient

    from bridge.web.app import create_app
    from tests.web.test_web_api import page_csrf

    rec = recommend(week, settings, at(2026, 11, 24, 5, 5), runner_name="heuristic")
    app_ = create_app(settings, week, host="127.0.0.1", clock=lambda: at(2026, 11, 24, 5, 10))
    with TestClient(app_, base_url="http://127.0.0.1:8765", follow_redirects=False) as c:
        csrf = page_csrf(c.get("/").text)
        r = c.post(
            "/api/feedback",
            json={"recommendation_id": rec.id, "response": "reschedule"},
            headers={"X-CSRF-Token": csrf},
        )
        assert r.status_code == 201 and r.json()["response"] == "rescheduled"
        nxt = r.json()["next"]
        assert nxt["action"] == rec.action and nxt["id"] != rec.id
        start = datetime.fromisoformat(nxt["window"]["start"])
        assert start.utcoffset() == timedelta(hours=1) and start > at(2026, 11, 24, 5, 10)
        page = c.get(f"/?done=rescheduled&next={nxt['id']}").text
        assert "Next free window for" in page and f"{start:%H:%M}" in page
