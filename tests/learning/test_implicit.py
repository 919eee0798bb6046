"""Answers read from the calendar: moved in -> accepted, moved away -> rescheduled, expiry."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from sqlalchemy import delete, select

from bridge.cycle.classify import classify_events
from bridge.cycle.recommend import recommend
from bridge.cycle.run import run_cycle
from bridge.intake.ingest import import_file
from bridge.intake.sources import read_context
from bridge.learning.feedback import record_feedback
from bridge.learning.implicit import detect
from bridge.store.models import Feedback, ImplicitWatch, Recommendation
from tests.conftest import DEMO_NOW

ICS = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//rhythm-bridge tests//EN
{events}END:VCALENDAR
"""
EVENT = """BEGIN:VEVENT
UID:{uid}@tests
DTSTAMP:20261118T120000Z
DTSTART;TZID=Europe/Berlin:{start}
DTEND;TZID=Europe/Berlin:{end}
SUMMARY:{title}
END:VEVENT
"""


def calendar(path: Path, *events: tuple[str, str, str, str]) -> Path:
    """Write an .ics with (uid, title, local start, local end) events, replacing the last one."""
    body = "".join(EVENT.format(uid=u, title=t, start=s, end=e) for u, t, s, e in events)
    path.write_text(ICS.format(events=body).replace("\n", "\r\n"))
    return path


def sync(store, settings, path: Path) -> None:
    import_file(store, "ics", path, read_context(settings, DEMO_NOW))
    classify_events(store, settings)


def the_rec(store) -> Recommendation:
    """The demo cycle's Thursday-morning recommendation, as DEEP_WORK.

    Which action the demo's runner picks depends on the shipped model (EXERCISE since
    model version 4, DEEP_WORK before); these tests are about reading the calendar for a
    deep-work recommendation, so they make it one.
    """
    with store.transaction() as s:
        rec = s.execute(select(Recommendation)).scalars().one()
        rec.action = "DEEP_WORK"
    with store.session() as s:
        return s.execute(select(Recommendation)).scalars().one()


def answers(store) -> list[tuple[int, str, str, float]]:
    with store.session() as s:
        rows = s.execute(select(Feedback).order_by(Feedback.recommendation_id)).scalars()
        return [(f.recommendation_id, f.response, f.channel, f.reward) for f in rows]


def test_a_deep_work_block_put_into_the_slot_counts_as_accepted(demo, tmp_path):
    settings, store = demo
    rec = the_rec(store)  # DEEP_WORK for Thursday morning
    assert rec.action == "DEEP_WORK"
    sync(
        store,
        settings,
        calendar(
            tmp_path / "me.ics", ("a", "Deep work: thesis", "20261119T100000", "20261119T113000")
        ),
    )
    report = run_cycle(settings, store, now=DEMO_NOW + timedelta(minutes=20))
    assert report.implicit["accepted"] == [rec.id]
    assert answers(store) == [(rec.id, "accepted", "calendar", 1.0)]


def test_the_next_slot_counts_too_but_not_later_and_not_other_actions(demo, tmp_path):
    settings, store = demo
    rec = the_rec(store)
    ics = tmp_path / "me.ics"
    # a run in the evening (two slots on) and a run in the afternoon that is not deep work
    sync(
        store,
        settings,
        calendar(
            ics,
            ("a", "Deep work", "20261119T180000", "20261119T190000"),
            ("b", "Yoga class", "20261119T130000", "20261119T140000"),
        ),
    )
    assert detect(store, settings, DEMO_NOW + timedelta(minutes=20)).accepted == []
    assert answers(store) == []
    # the deep work block moves into the afternoon: the slot after the recommended one
    sync(
        store,
        settings,
        calendar(
            ics,
            ("a", "Deep work", "20261119T140000", "20261119T150000"),
            ("b", "Yoga class", "20261119T130000", "20261119T140000"),
        ),
    )
    assert detect(store, settings, DEMO_NOW + timedelta(minutes=40)).accepted == [rec.id]
    assert answers(store) == [(rec.id, "accepted", "calendar", 1.0)]


def fresh_recommendation_over(store, settings, ics: Path) -> Recommendation:
    """Replace the demo's recommendation by one made while `ics` is already in the calendar."""
    sync(store, settings, ics)
    with store.transaction() as s:
        s.execute(delete(ImplicitWatch))
        s.execute(delete(Recommendation))
    recommend(store, settings, DEMO_NOW)
    rec = the_rec(store)  # as DEEP_WORK, whatever the shipped model chose
    detect(store, settings, DEMO_NOW)  # what the cycle does right after recommending
    return rec


def test_moving_a_planned_block_out_of_the_window_is_a_reschedule(demo, tmp_path):
    settings, store = demo
    ics = calendar(tmp_path / "me.ics", ("a", "Focus block", "20261119T100000", "20261119T113000"))
    rec = fresh_recommendation_over(store, settings, ics)
    with store.session() as s:
        assert len(s.execute(select(ImplicitWatch)).all()) >= 1
    # a block already planned there is not an answer by itself
    assert detect(store, settings, DEMO_NOW + timedelta(minutes=15)).accepted == []
    calendar(ics, ("a", "Focus block", "20261120T100000", "20261120T113000"))  # to Friday
    sync(store, settings, ics)
    found = detect(store, settings, DEMO_NOW + timedelta(minutes=30))
    assert found.rescheduled == [rec.id] and found.accepted == []
    assert answers(store) == [(rec.id, "rescheduled", "calendar", -1.0)]
    with store.session() as s:
        assert s.execute(select(ImplicitWatch)).all() == []


def test_moving_a_block_within_the_window_or_deleting_it_is_not_an_answer(demo, tmp_path):
    settings, store = demo
    ics = calendar(tmp_path / "me.ics", ("a", "Focus block", "20261119T100000", "20261119T113000"))
    fresh_recommendation_over(store, settings, ics)
    sync(store, settings, calendar(ics, ("a", "Focus block", "20261119T130000", "20261119T143000")))
    found = detect(store, settings, DEMO_NOW + timedelta(minutes=15))
    assert (found.accepted, found.rescheduled, found.expired) == ([], [], [])
    assert answers(store) == []
    sync(store, settings, calendar(ics))  # deleted: cancelled, neither accepted nor moved
    detect(store, settings, DEMO_NOW + timedelta(minutes=30))
    assert answers(store) == []


def test_unanswered_recommendations_expire_at_the_end_of_their_slot(demo):
    settings, store = demo
    rec = the_rec(store)
    assert detect(store, settings, DEMO_NOW.replace(hour=11, minute=59)).expired == []
    report = run_cycle(settings, store, now=DEMO_NOW.replace(hour=12, minute=5))
    assert report.implicit["expired"] == [rec.id]
    assert answers(store) == [(rec.id, "expired", "timeout", 0.0)]
    # the history keeps an expiry apart from an explicit ignore
    with store.session() as s:
        recs = s.execute(select(Recommendation).order_by(Recommendation.id)).scalars().all()
    assert len(recs) == 2 and recs[1].slot == 1
    record_feedback(store, recs[1].id, "ignore")
    assert [a[1:3] for a in answers(store)] == [("expired", "timeout"), ("ignored", "cli")]


def test_an_explicit_answer_wins_over_the_calendar(demo, tmp_path):
    settings, store = demo
    rec = the_rec(store)
    record_feedback(store, rec.id, "ignore", "web")
    sync(
        store,
        settings,
        calendar(tmp_path / "me.ics", ("a", "Deep work", "20261119T100000", "20261119T110000")),
    )
    assert detect(store, settings, DEMO_NOW + timedelta(minutes=20)).accepted == []
    assert detect(store, settings, DEMO_NOW.replace(hour=13)).expired == []
    assert answers(store) == [(rec.id, "ignored", "web", -1.0)]
