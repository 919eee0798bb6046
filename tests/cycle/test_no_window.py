"""A calendar with no room in the whole look-ahead: nothing is recommended, and every output
says why and when the next free window is.

The calendar is a two-day conference (an out-of-office event with times, Monday 00:00 to
Wednesday 00:00, as Google stores a trip marked away; an all-day one would block only work)
and the red-eye flight home that runs past the end of the look-ahead, stored the way a
live calendar source stores them; the cycle runs on the real store (SQLite or PostgreSQL).
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import httpx
import pytest
import respx
from sqlalchemy import func, select
from starlette.testclient import TestClient
from typer.testing import CliRunner

from bridge.cycle.recommend import NoWindow, recommend
from bridge.cycle.run import run_cycle
from bridge.out.mqtt.entities import NO_WINDOW, messages, recommendation_states
from bridge.out.snapshot import build_snapshot, current_recommendation, no_window_document
from bridge.store import upsert
from bridge.store.models import CalendarEvent, Recommendation
from bridge.web.app import create_app
from connectors.base import EventRecord
from tests.conftest import BERLIN
from tests.helpers import validate_snapshot

HOOK = "https://hooks.example.org/rhythm/abc"


def at(*args: int) -> datetime:
    return datetime(*args, tzinfo=BERLIN)


MONDAY_0505 = at(2026, 11, 23, 5, 5)  # the coming slot: Monday morning
# 8 slots from Monday morning end on Wednesday 05:00; the flight home (via Frankfurt) lands
# at 13:30, so the first free window after the look-ahead is Wednesday 13:30 to the end of
# the afternoon (17:00). From Monday afternoon the look-ahead ends Wednesday 12:00: still full.
LOOK_AHEAD_END = at(2026, 11, 25, 5, 0)
NEXT_WINDOW = (at(2026, 11, 25, 13, 30), at(2026, 11, 25, 17, 0))


def event(uid: str, title: str, start: datetime, end: datetime, **kw) -> EventRecord:
    return EventRecord(calendar_id="primary", uid=uid, title=title, start=start, end=end, **kw)


FULL = [
    event(
        "conf",
        "Conference in Lisbon",
        at(2026, 11, 23, 0, 0),
        at(2026, 11, 25, 0, 0),
        event_type="outOfOffice",
    ),
    event("flight", "Flight LIS-FRA-BER", at(2026, 11, 24, 23, 0), at(2026, 11, 25, 13, 30)),
    # Shown as free: never blocks, so it cannot be what makes the days full.
    event(
        "talks",
        "Talks to watch",
        at(2026, 11, 23, 9, 0),
        at(2026, 11, 23, 17, 0),
        transparency="transparent",
    ),
]


def store_events(store, events) -> None:
    """Store (or, for a uid already stored, update) events as a live calendar source does."""
    with store.transaction() as s:
        upsert(
            s,
            CalendarEvent,
            [e.row("google_calendar", datetime.now(UTC)) for e in events],
            keys=("source", "calendar_id", "uid", "recurrence_id"),
            update=("status", "start_utc", "end_utc"),
        )


def rec_count(store) -> int:
    with store.session() as s:
        return s.execute(select(func.count()).select_from(Recommendation)).scalar_one()


@pytest.fixture
def full(store):
    store_events(store, FULL)
    return store


def window_of(doc) -> tuple[datetime, datetime]:
    w = doc["next_window"]
    return datetime.fromisoformat(w["start"]), datetime.fromisoformat(w["end"])


def test_a_full_look_ahead_recommends_nothing_and_stores_nothing_to_answer(full, settings):
    gap = recommend(full, settings, MONDAY_0505, runner_name="bundled")
    assert isinstance(gap, NoWindow)
    assert gap.action is None and gap.id is None
    assert "no free window" in gap.reason and "8 slots" in gap.reason
    assert gap.look_ahead_until == LOOK_AHEAD_END
    assert gap.next_window == NEXT_WINDOW
    assert rec_count(full) == 0
    # Asked again later in the same morning: still nothing, still nothing stored.
    assert isinstance(recommend(full, settings, MONDAY_0505 + timedelta(hours=2)), NoWindow)
    assert rec_count(full) == 0
    assert current_recommendation(full, settings, MONDAY_0505) is None


def test_the_snapshot_says_why_and_when_the_next_window_is(full, settings):
    recommend(full, settings, MONDAY_0505)
    snap = build_snapshot(full, settings, MONDAY_0505)
    validate_snapshot(snap)
    assert snap["schema"] == "rhythm-bridge/snapshot@1.3"
    assert snap["recommendation"] is None
    gap = snap["no_window"]
    assert (gap["date"], gap["slot"], gap["slot_name"]) == ("2026-11-23", 0, "morning")
    assert "no free window" in gap["reason"]
    assert window_of(gap) == NEXT_WINDOW
    assert gap["next_window"]["start"].endswith("+01:00")  # the person's offset
    assert datetime.fromisoformat(gap["look_ahead_until"]) == LOOK_AHEAD_END


def test_beyond_the_next_days_there_is_no_next_window(store, settings):
    week_off = event(
        "leave",
        "Parental leave handover week",
        at(2026, 11, 23, 0, 0),
        at(2026, 12, 7, 0, 0),
        event_type="outOfOffice",  # with times: it blocks everything (all day: only work)
    )
    store_events(store, [week_off])
    gap = recommend(store, settings, MONDAY_0505)
    assert isinstance(gap, NoWindow) and gap.next_window is None
    snap = build_snapshot(store, settings, MONDAY_0505)
    validate_snapshot(snap)
    assert snap["no_window"]["next_window"] is None


def test_when_room_opens_up_the_next_cycle_recommends_and_the_state_ends(full, settings):
    recommend(full, settings, MONDAY_0505)
    assert no_window_document(full, settings, MONDAY_0505) is not None
    # The conference is cancelled: the same morning now has room.
    cancelled = [e for e in FULL if e.uid != "conf"]
    store_events(
        full,
        [
            *cancelled,
            event(
                "conf",
                "Conference in Lisbon",
                at(2026, 11, 23, 0, 0),
                at(2026, 11, 25, 0, 0),
                all_day=True,
                event_type="outOfOffice",
                status="cancelled",
            ),
        ],
    )
    rec = recommend(full, settings, MONDAY_0505 + timedelta(minutes=15))
    assert isinstance(rec, Recommendation) and rec.window_start is not None
    assert no_window_document(full, settings, MONDAY_0505) is None
    snap = build_snapshot(full, settings, MONDAY_0505 + timedelta(minutes=15))
    validate_snapshot(snap)
    assert snap["recommendation"]["id"] == rec.id and snap["no_window"] is None


def test_a_state_left_from_an_earlier_slot_is_not_shown(full, settings):
    recommend(full, settings, MONDAY_0505)
    # Nobody ran a cycle since: on Thursday the Monday state says nothing about now.
    assert no_window_document(full, settings, at(2026, 11, 26, 9, 0)) is None
    assert build_snapshot(full, settings, at(2026, 11, 26, 9, 0))["no_window"] is None


def test_a_whole_cycle_writes_the_state_into_latest_json(full, settings):
    report = run_cycle(settings, full, now=MONDAY_0505, only=[])
    assert report.recommendation == {
        "id": None,
        "action": None,
        "no_window": report.recommendation["no_window"],
    }
    assert "no free window" in report.recommendation["no_window"]
    doc = json.loads(settings.export_path.read_text())
    validate_snapshot(doc)
    assert doc["recommendation"] is None and window_of(doc["no_window"]) == NEXT_WINDOW
    assert rec_count(full) == 0


def test_the_api_and_the_page_say_no_window_and_offer_no_buttons(full, settings, memory_keyring):
    recommend(full, settings, MONDAY_0505)
    app = create_app(settings, full, host="127.0.0.1", clock=lambda: MONDAY_0505)
    client = TestClient(app, base_url="http://127.0.0.1:8765", follow_redirects=False)
    body = client.get("/api/recommendation").json()
    assert body["recommendation"] is None
    assert window_of(body["no_window"]) == NEXT_WINDOW
    page = client.get("/").text
    assert "Nothing recommended" in page
    assert "no free window:" in page and "Wed 25 Nov 13:30" in page
    assert 'name="recommendation_id"' not in page


def test_the_cli_prints_nothing_recommended_and_null_json(full, settings, tmp_path):
    import time_machine

    from bridge.cli.main import app

    config = tmp_path / "config.toml"
    config.write_text(
        f'timezone = "Europe/Berlin"\ndata_dir = "{settings.data_path}"\n'
        f'[database]\nurl = "{settings.database.url}"\n'
    )
    with time_machine.travel(MONDAY_0505, tick=False):
        out = CliRunner().invoke(app, ["--config", str(config), "recommend", "--json"])
        assert out.exit_code == 0, out.output
        doc = json.loads(out.stdout)
        assert doc["id"] is None and doc["action"] is None and doc["window"] is None
        assert "no free window" in doc["window_reason"]
        assert window_of(doc["no_window"]) == NEXT_WINDOW
        text = CliRunner().invoke(app, ["--config", str(config), "recommend"])
    assert text.exit_code == 0, text.output
    assert text.stdout.startswith("nothing recommended: the calendar has no free window")
    assert "next free window: 2026-11-25T13:30:00+01:00" in text.stdout
    assert rec_count(full) == 0


def test_home_assistant_reads_no_window_as_an_option_of_the_enum(full, settings):
    recommend(full, settings, MONDAY_0505)
    gap = no_window_document(full, settings, MONDAY_0505)
    states = recommendation_states(None, gap)
    state, attrs = states["recommendation"]
    assert state == NO_WINDOW
    assert "no free window" in attrs["reason"]
    assert attrs["next_window"] == gap["next_window"]
    from bridge.out.mqtt.entities import Topics

    msgs = messages(Topics("homeassistant", "rb"), None, None, {"sources": []}, gap)
    config = json.loads(msgs.configs["homeassistant/sensor/rb/recommendation/config"])
    assert NO_WINDOW in config["options"]
    assert msgs.states["rb/recommendation/state"] == NO_WINDOW


@respx.mock
def test_the_webhook_is_told_once_while_the_calendar_stays_full(full, settings):
    settings = settings.model_copy(
        update={"notify": settings.notify.model_copy(update={"webhook_url": HOOK})}, deep=True
    )
    route = respx.post(HOOK).mock(
        side_effect=[httpx.Response(503), httpx.Response(200), httpx.Response(200)]
    )
    first = run_cycle(settings, full, now=MONDAY_0505, only=[])
    assert first.notified == {"webhook": "failed: HTTP 503"}
    again = run_cycle(settings, full, now=MONDAY_0505 + timedelta(minutes=15), only=[])
    assert again.notified == {"webhook": "sent"}
    body = json.loads(route.calls.last.request.content)
    assert body["event"] == "no_window"
    assert "recommendation" not in body  # nothing to answer, no feedback URL
    assert window_of(body["no_window"]) == NEXT_WINDOW
    # The afternoon is the same news: not sent again.
    later = run_cycle(settings, full, now=at(2026, 11, 23, 12, 5), only=[])
    assert later.notified == {}
    assert route.call_count == 2


def test_the_shape_is_the_same_on_every_output(full, settings, memory_keyring):
    """The snapshot, the API and the CLI carry the same no_window document."""
    recommend(full, settings, MONDAY_0505)
    snap = build_snapshot(full, settings, MONDAY_0505)["no_window"]
    api = no_window_document(full, settings, MONDAY_0505)
    assert snap == api
    assert set(snap) == {
        "date",
        "slot",
        "slot_name",
        "reason",
        "look_ahead_until",
        "next_window",
        "since",
    }
    assert date.fromisoformat(snap["date"]) == date(2026, 11, 23)
