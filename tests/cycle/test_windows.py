"""Free windows: the busy rules, and recommendations placed only where the calendar is free.

The calendar is tests/fixtures/calendar/work_week.ics (see its SOURCES.md), imported
through the real .ics connector into the real store.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import delete, select, update

from bridge.cycle.recommend import NoWindow, min_minutes, plan_slot, recommend
from bridge.errors import ConfigError
from bridge.intake.ingest import import_file
from bridge.out.snapshot import build_snapshot, recommendation_document
from bridge.store import upsert
from bridge.store.models import CalendarEvent, Recommendation
from connectors.base import EventRecord, ReadContext
from mappings.free_windows import (
    DEFAULT_MIN_MINUTES,
    WORK_ACTIONS,
    blocks_time,
    busy_blocks,
    free_windows,
    window_for,
)
from mappings.slots import SlotKey, slot_bounds, slot_of_instant
from tests.conftest import BERLIN, FIXTURES
from tests.helpers import validate_snapshot

ICS = FIXTURES / "calendar" / "work_week.ics"


def at(*args: int) -> datetime:
    return datetime(*args, tzinfo=BERLIN)


# What blocks time in work_week.ics in the week of 2026-11-23, written out by hand from
# the file (not through the code under test): stand-ups, the Monday shift and review, the
# tentative workshop; and the out-of-office Friday (all-day: local midnight to midnight),
# which blocks only the work actions.
OOF_FRIDAY = (at(2026, 11, 27, 0, 0), at(2026, 11, 28, 0, 0))
BUSY_WEEK = [
    (at(2026, 11, 23, 4, 30), at(2026, 11, 23, 9, 0)),
    (at(2026, 11, 23, 9, 0), at(2026, 11, 23, 9, 15)),
    (at(2026, 11, 23, 9, 15), at(2026, 11, 23, 12, 30)),
    (at(2026, 11, 24, 9, 0), at(2026, 11, 24, 9, 15)),
    (at(2026, 11, 24, 12, 0), at(2026, 11, 24, 17, 0)),
    (at(2026, 11, 26, 10, 0), at(2026, 11, 26, 10, 15)),
]


def overlaps(a: tuple[datetime, datetime], b: tuple[datetime, datetime]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@pytest.fixture
def week(store):
    import_file(store, "ics", ICS, ReadContext(tz=BERLIN, now=at(2026, 11, 22, 12, 0)))
    return store


def store_event(store, event: EventRecord) -> None:
    """One event as a live calendar source stores it."""
    with store.transaction() as s:
        upsert(
            s,
            CalendarEvent,
            [event.row("google_calendar", datetime.now(UTC))],
            keys=("source", "calendar_id", "uid", "recurrence_id"),
        )


def make(store, settings, now):
    rec = recommend(store, settings, now, runner_name="bundled")
    return rec, recommendation_document(rec, None, settings.tz)


def window(doc):
    w = doc["window"]
    return datetime.fromisoformat(w["start"]), datetime.fromisoformat(w["end"])


# ---- the rules -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "busy"),
    [
        ({"status": "confirmed"}, True),
        ({"status": "tentative"}, True),
        ({"status": "cancelled"}, False),
        ({"status": "confirmed", "self_response": "declined"}, False),
        ({"status": "tentative", "self_response": "declined"}, False),
        ({"status": "confirmed", "self_response": "accepted"}, True),
        ({"status": "confirmed", "transparency": "transparent"}, False),
        ({"status": "confirmed", "all_day": True}, False),
        # An all-day out-of-office day blocks only the work actions (away_from_work).
        ({"status": "confirmed", "all_day": True, "event_type": "outOfOffice"}, False),
        ({"status": "confirmed", "event_type": "outOfOffice"}, True),
        ({"status": "confirmed", "transparency": "transparent", "event_type": "outOfOffice"}, True),
        ({"status": "cancelled", "event_type": "outOfOffice"}, False),
        ({"status": "confirmed", "event_type": "focusTime"}, True),
    ],
)
def test_which_events_block_time(fields, busy):
    assert blocks_time(fields) is busy


def test_free_windows_are_the_gaps_between_merged_blocks_clipped_to_the_slot():
    lo, hi = at(2026, 11, 23, 12, 0), at(2026, 11, 23, 17, 0)
    events = [
        {"start_utc": at(2026, 11, 23, 11, 0), "end_utc": at(2026, 11, 23, 12, 30)},
        {"start_utc": at(2026, 11, 23, 14, 0), "end_utc": at(2026, 11, 23, 15, 0)},
        {"start_utc": at(2026, 11, 23, 14, 30), "end_utc": at(2026, 11, 23, 15, 30)},
        {"start_utc": at(2026, 11, 23, 16, 45), "end_utc": at(2026, 11, 23, 18, 0)},
        {"start_utc": at(2026, 11, 23, 13, 0), "end_utc": at(2026, 11, 23, 13, 0)},  # empty
    ]
    busy = busy_blocks(events)
    assert busy[1] == (at(2026, 11, 23, 14, 0), at(2026, 11, 23, 15, 30))
    assert free_windows(lo, hi, busy) == [
        (at(2026, 11, 23, 12, 30), at(2026, 11, 23, 14, 0)),
        (at(2026, 11, 23, 15, 30), at(2026, 11, 23, 16, 45)),
    ]
    assert free_windows(lo, hi, []) == [(lo, hi)]
    assert free_windows(lo, hi, [(at(2026, 11, 23, 10, 0), at(2026, 11, 23, 18, 0))]) == []
    free = free_windows(lo, hi, busy)
    # DEEP_WORK (45) fits the first gap; SLEEP (180) fits none.
    assert window_for("DEEP_WORK", free, DEFAULT_MIN_MINUTES, 60) == (
        at(2026, 11, 23, 12, 30),
        at(2026, 11, 23, 13, 30),
    )
    assert window_for("SLEEP", free, DEFAULT_MIN_MINUTES, 60) is None


def test_unknown_actions_in_the_config_are_a_config_error(settings):
    bad = settings.model_copy(
        update={"windows": settings.windows.model_copy(update={"min_minutes": {"NAP": 20}})}
    )
    with pytest.raises(ConfigError, match=r"windows\.min_minutes.*'NAP'"):
        min_minutes(bad)
    ok = settings.model_copy(
        update={"windows": settings.windows.model_copy(update={"min_minutes": {"EXERCISE": 50}})}
    )
    assert min_minutes(ok)["EXERCISE"] == 50 and min_minutes(ok)["MEDITATE"] == 10


# ---- recommendations in a real week --------------------------------------------------


def test_the_ics_connector_keeps_what_the_rules_need(week):
    with week.session() as s:
        rows = {(e.title, e.recurrence_id): e for e in s.execute(select(CalendarEvent)).scalars()}
    titles = {t for t, _ in rows}
    assert "Team standup (moved)" in titles
    ooo = next(e for (t, _), e in rows.items() if t == "Out of office")
    assert ooo.all_day and ooo.event_type == "outOfOffice"
    standups = sorted(
        e.start_utc.astimezone(BERLIN) for (t, _), e in rows.items() if t == "Team standup"
    )
    assert at(2026, 11, 25, 9, 0) not in standups  # EXDATE


def test_a_booked_morning_moves_the_recommendation_to_the_afternoon(week, settings):
    rec, doc = make(week, settings, at(2026, 11, 23, 5, 5))
    assert (rec.local_date.isoformat(), rec.slot) == ("2026-11-23", 1)
    start, end = window(doc)
    assert start == at(2026, 11, 23, 12, 30)  # the review runs past the slot boundary
    assert start.utcoffset() == timedelta(hours=1)  # shown with the person's offset
    assert (end - start) >= timedelta(minutes=DEFAULT_MIN_MINUTES[rec.action])
    assert "morning" in doc["window_reason"] and "afternoon" in doc["window_reason"]
    # Asked again in the same booked morning, it is the same recommendation, not a new one.
    again, _ = make(week, settings, at(2026, 11, 23, 7, 0))
    assert again.id == rec.id and week.count(Recommendation) == 1


def test_a_tentative_workshop_blocks_and_a_transparent_focus_block_does_not(week, settings):
    rec, doc = make(week, settings, at(2026, 11, 24, 9, 20))
    start, _ = window(doc)
    assert rec.slot == 0 and start == at(2026, 11, 24, 9, 20)  # "Focus time" is free
    rec, doc = make(week, settings, at(2026, 11, 24, 12, 5))
    assert rec.slot == 2 and window(doc)[0] == at(2026, 11, 24, 17, 0)


def test_removed_and_cancelled_events_leave_their_time_free(week, settings):
    rec, doc = make(week, settings, at(2026, 11, 25, 8, 50))
    start, end = window(doc)
    # No stand-up on Wednesday (EXDATE), the all-day birthday is transparent.
    assert start == at(2026, 11, 25, 8, 50) and end > at(2026, 11, 25, 9, 15)
    rec, doc = make(week, settings, at(2026, 11, 25, 12, 1))
    assert rec.slot == 1 and window(doc)[0] == at(2026, 11, 25, 12, 5)  # offsite cancelled


def test_a_moved_instance_blocks_its_new_time(week, settings):
    rec, doc = make(week, settings, at(2026, 11, 26, 9, 50))
    w = window(doc)
    assert not overlaps(w, (at(2026, 11, 26, 10, 0), at(2026, 11, 26, 10, 15)))
    if rec.action != "MEDITATE":  # only a 10-minute action fits before the stand-up
        assert w[0] == at(2026, 11, 26, 10, 15)
    assert w[0] >= at(2026, 11, 26, 9, 50)


def test_an_out_of_office_day_rules_out_work_not_the_rest_of_the_day(week, settings):
    """Issue 41 item 6: an all-day "Out of office" is a day away from work. At 14:26 on that
    Friday the recommendation used to be SLEEP for 00:00-03:00 with a reason naming only the
    afternoon; now it is the afternoon itself, for anything but work."""
    for now, slot, start in (
        (at(2026, 11, 27, 5, 5), 0, at(2026, 11, 27, 5, 5)),
        (at(2026, 11, 27, 14, 26), 1, at(2026, 11, 27, 14, 30)),
    ):
        rec, doc = make(week, settings, now)
        assert (rec.local_date.isoformat(), rec.slot) == ("2026-11-27", slot)
        assert rec.action not in WORK_ACTIONS and rec.action != "SLEEP"
        assert doc["window_reason"] is None and window(doc)[0] == start
        obs = json.loads(rec.observation)
        assert not set(WORK_ACTIONS) & set(obs["available_actions"])
    # The evening is free for rest and leisure too.
    rec, doc = make(week, settings, at(2026, 11, 27, 17, 0))
    assert rec.slot == 2 and window(doc)[0] == at(2026, 11, 27, 17, 0)


def test_a_work_action_is_never_placed_on_an_out_of_office_day(week, settings):
    plan = plan_slot(week, settings, SlotKey(date(2026, 11, 27), 1), at(2026, 11, 27, 14, 26))
    assert plan.key == SlotKey(date(2026, 11, 27), 1) and plan.reason is None
    assert plan.free_for("DEEP_WORK") == [] and plan.free_for("EXERCISE")
    # Asked for deep work, the plan goes past the whole day, and says what filled it.
    deep = plan_slot(
        week,
        settings,
        SlotKey(date(2026, 11, 27), 1),
        at(2026, 11, 27, 14, 26),
        action="DEEP_WORK",
    )
    assert deep.key == SlotKey(date(2026, 11, 27), 3)
    assert deep.free_for("DEEP_WORK")[0][0] == at(2026, 11, 28, 0, 0)  # after midnight
    assert deep.reason == (
        "no free 45 min in the afternoon and evening of 2026-11-27 (busy: Out of office); "
        "made for the night of 2026-11-27, the first slot with room: nothing else fits sooner"
    )


def test_a_night_is_chosen_in_the_afternoon_only_when_nothing_fits_and_it_says_so(store, settings):
    """A wedding fills the afternoon and evening: the night is the first slot with room,
    and the reason names both slots passed over, what fills them, and that nothing fit."""
    store_event(
        store,
        EventRecord(
            calendar_id="primary",
            uid="wedding",
            title="Anna's wedding",
            start=at(2026, 12, 4, 12, 0),
            end=at(2026, 12, 4, 23, 30),
        ),
    )
    rec, doc = make(store, settings, at(2026, 12, 4, 14, 26))
    assert (rec.local_date.isoformat(), rec.slot) == ("2026-12-04", 3)
    assert window(doc)[0] == at(2026, 12, 4, 23, 30)
    assert doc["window_reason"] == (
        "no free 10 min in the afternoon and evening of 2026-12-04 (busy: Anna's wedding); "
        "made for the night of 2026-12-04, the first slot with room: nothing else fits sooner"
    )


def test_a_declined_invitation_leaves_its_time_free(store, settings):
    common = {
        "calendar_id": "primary",
        "start": at(2026, 11, 30, 12, 0),
        "end": at(2026, 11, 30, 17, 0),
        "status": "confirmed",
    }
    declined = EventRecord(uid="inv-1", title="All-hands", self_response="declined", **common)
    store_event(store, declined)
    rec, doc = make(store, settings, at(2026, 11, 30, 12, 1))
    assert rec.slot == 1 and window(doc)[0] == at(2026, 11, 30, 12, 5)
    with store.transaction() as s:
        s.execute(delete(Recommendation))
        s.execute(update(CalendarEvent).values(self_response="accepted"))
    rec, doc = make(store, settings, at(2026, 11, 30, 12, 1))
    assert rec.slot == 2 and window(doc)[0] == at(2026, 11, 30, 17, 0)


def test_no_window_in_the_look_ahead_recommends_nothing_and_says_why(week, settings):
    short = settings.model_copy(
        update={"windows": settings.windows.model_copy(update={"look_ahead_slots": 1})}
    )
    gap = recommend(week, short, at(2026, 11, 23, 5, 5), runner_name="bundled")
    assert isinstance(gap, NoWindow) and gap.action is None
    assert "no free window" in gap.reason
    with week.session() as s:
        assert s.execute(select(Recommendation)).first() is None
    snap = build_snapshot(week, short, at(2026, 11, 23, 5, 5))
    validate_snapshot(snap)
    assert snap["recommendation"] is None
    assert snap["no_window"]["reason"] == gap.reason
    # The Monday morning shift ends at 12:30: the next free window is that afternoon.
    assert snap["no_window"]["next_window"]["start"] == "2026-11-23T12:30:00+01:00"


def test_no_recommendation_overlaps_busy_time_all_week(week, settings):
    """Every slot of the week, asked at its start and in its middle: never a busy minute."""
    made = {}
    t = at(2026, 11, 23, 5, 1)
    while t < at(2026, 11, 30, 5, 0):
        for now in (t, t + timedelta(hours=2, minutes=17)):
            rec, doc = make(week, settings, now)
            made[rec.id] = (rec, doc, now)
        t = t + timedelta(hours=1)
    assert len(made) >= 20
    need = min_minutes(settings)
    for rec, doc, now in made.values():
        w = window(doc)
        busy = BUSY_WEEK + ([OOF_FRIDAY] if rec.action in WORK_ACTIONS else [])
        assert not any(overlaps(w, b) for b in busy), (doc, now)
        lo, hi = slot_bounds(SlotKey(rec.local_date, rec.slot), BERLIN)
        assert lo <= w[0] < w[1] <= hi
        assert w[1] - w[0] >= timedelta(minutes=need[rec.action])
        obs = json.loads(rec.observation)
        assert rec.action in obs["available_actions"]
        assert obs["free_minutes"] >= need[rec.action]


def test_across_the_spring_dst_change(store, settings):
    ctx = ReadContext(tz=BERLIN, now=at(2027, 3, 26, 12, 0))
    import_file(store, "ics", ICS, ctx)
    with store.session() as s:
        runs = sorted(
            e.start_utc for e in s.execute(select(CalendarEvent)).scalars() if "long run" in e.title
        )
    # 07:00 local is 06:00Z before the change and 05:00Z after it.
    assert [r.astimezone(UTC).hour for r in runs[:2]] == [6, 5]
    night = SlotKey(at(2027, 3, 27, 0, 0).date(), 3)
    lo, hi = slot_bounds(night, BERLIN)
    assert hi - lo == timedelta(hours=6)  # 22:00 CET to 05:00 CEST
    rec, doc = make(store, settings, at(2027, 3, 28, 6, 20))
    w = window(doc)
    assert not overlaps(w, (at(2027, 3, 28, 7, 0), at(2027, 3, 28, 8, 0)))
    assert w[0].utcoffset() == timedelta(hours=2)
    assert slot_of_instant(w[0], BERLIN).slot == rec.slot


# ---- the window wherever the recommendation is shown ----------------------------------


def test_the_window_is_in_the_cli_the_page_and_the_api(demo, tmp_path, monkeypatch):
    import re

    from starlette.testclient import TestClient
    from typer.testing import CliRunner

    from bridge.cli.main import app
    from bridge.web.app import create_app
    from tests.conftest import DEMO_NOW
    from tests.helpers import write_config

    settings, store = demo
    web = create_app(settings, store, host="127.0.0.1", clock=lambda: DEMO_NOW)
    with TestClient(web, base_url="http://127.0.0.1:8765") as c:
        rec = c.get("/api/recommendation").json()["recommendation"]
        page = c.get("/").text
    assert rec["window"] == {
        "start": "2026-11-19T08:40:00+01:00",
        "end": "2026-11-19T09:30:00+01:00",
    }
    assert rec["window_reason"] is None
    assert re.search(
        r'data-testid="rec-window">free <time datetime="2026-11-19T08:40:00\+01:00">08:40</time>',
        page,
    )

    cfg = write_config(tmp_path / "config.toml", tmp_path / "cli-data")
    monkeypatch.setenv("RHYTHM_BRIDGE_CONFIG", str(cfg))
    out = CliRunner().invoke(app, ["recommend", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    start, end = (datetime.fromisoformat(doc["window"][k]) for k in ("start", "end"))
    assert start.utcoffset() is not None and start < end  # an empty calendar: all free
    assert doc["window_reason"] is None
    plain = CliRunner().invoke(app, ["recommend"])
    assert f" {start:%H:%M}-{end:%H:%M}: {doc['action']}" in plain.stdout


def test_across_the_autumn_dst_change(store, settings):
    # Sunday 25 October 2026, 03:00 CEST becomes 02:00 CET: that night slot lasts 8 hours,
    # and a late event written in local time still blocks the right instants.
    night = SlotKey(at(2026, 10, 24, 12, 0).date(), 3)
    lo, hi = slot_bounds(night, BERLIN)
    assert hi - lo == timedelta(hours=8)
    late = EventRecord(
        calendar_id="primary",
        uid="late-call",
        title="Call with Tokyo",
        start=at(2026, 10, 25, 1, 30),
        end=at(2026, 10, 25, 4, 30),  # after the change: +01:00
    )
    store_event(store, late)
    rec, doc = make(store, settings, at(2026, 10, 25, 1, 0))
    w = window(doc)
    assert rec.slot == 3 and not overlaps(w, (late.start, late.end))
    # Before the call (01:00-01:30 CEST) or after it (04:30-05:00 CET): 30 minutes each.
    assert w in (
        (at(2026, 10, 25, 1, 0), at(2026, 10, 25, 1, 30)),
        (late.end, at(2026, 10, 25, 5, 0)),
    )
    # 01:30 CEST to 04:30 CET is 4 hours (same-zone subtraction in Python would say 3).
    assert late.end.astimezone(UTC) - late.start.astimezone(UTC) == timedelta(hours=4)
    with store.session() as s:
        stored = s.execute(select(CalendarEvent)).scalar_one()
    assert stored.end_utc - stored.start_utc == timedelta(hours=4)


def test_the_scheduled_action_is_one_still_ahead_in_the_slot(store, settings):
    from bridge.cycle.recommend import observation_for

    for uid, title, action, start, end in [
        ("gym", "Gym", "EXERCISE", at(2026, 11, 30, 12, 0), at(2026, 11, 30, 13, 0)),
        ("sync", "Team sync", "ADMIN_WORK", at(2026, 11, 30, 15, 0), at(2026, 11, 30, 15, 30)),
    ]:
        store_event(
            store,
            EventRecord(
                uid=uid,
                title=title,
                calendar_id="primary",
                start=start,
                end=end,
                status="confirmed",
            ),
        )
        with store.transaction() as s:
            s.execute(update(CalendarEvent).where(CalendarEvent.uid == uid).values(action=action))
    afternoon = SlotKey(at(2026, 11, 30, 12, 0).date(), 1)

    def scheduled(now):
        return observation_for(store, settings, afternoon, now)["active_event"]

    assert scheduled(at(2026, 11, 30, 11, 0)) == "EXERCISE"  # before the slot: its first
    assert scheduled(at(2026, 11, 30, 12, 30)) == "EXERCISE"  # the gym is still on
    assert scheduled(at(2026, 11, 30, 13, 30)) == "ADMIN_WORK"  # the gym is over
    assert scheduled(at(2026, 11, 30, 16, 0)) is None  # nothing left in the slot
