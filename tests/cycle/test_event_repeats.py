"""A title written out as lone events week after week reads as recurring, as a series'
instances do: timetable exports write each class as its own event."""

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from bridge.cycle.classify import REPEATS, Standing, classify_events, event_infos
from bridge.store.models import CalendarEvent
from tests.helpers import calendar_event

MONDAY = datetime(2026, 11, 2, 9, tzinfo=UTC)


def _event(uid, title, start, rid=""):
    return calendar_event(
        uid, title, start, 90, calendar_id="/cal/timetable.ics", recurrence_id=rid
    )


def _rows():
    weekly = [_event(f"w{n}", "Zant Quibbly", MONDAY + timedelta(weeks=n)) for n in range(REPEATS)]
    twice = [_event(f"t{n}", "Vorpel Snook", MONDAY + timedelta(days=1, weeks=n)) for n in range(2)]
    series = [_event("s", "Mrrp Vonk", MONDAY + timedelta(days=2), rid="20261104T090000Z")]
    return weekly, twice, series


def test_a_title_met_often_enough_is_read_as_recurring(settings):
    weekly, twice, series = _rows()
    infos = event_infos([*weekly, *twice, *series], settings)
    assert [i.recurring for i in infos] == [True] * REPEATS + [False, False, True]
    # Counted among the standing events given (the person's stored ones), not only the
    # rows asked.
    standing = [Standing(n, e.title, e.calendar_id) for n, e in enumerate(weekly)]
    assert event_infos(weekly[:1], settings, standing)[0].recurring
    assert not event_infos(weekly[:1], settings)[0].recurring


def test_the_daemon_counts_every_standing_stored_title(store, settings):
    weekly, twice, _ = _rows()
    # A cancelled row is not a repeat: a re-read that changed an event's key left it behind.
    old_copy = _event("t0-old", "Vorpel Snook", twice[0].start_utc)
    old_copy.status = "cancelled"
    with store.transaction() as session:
        session.add_all([*weekly, *twice, old_copy])
    classify_events(store, settings)
    with store.session() as session:
        got = {
            (e.title, e.action_layer, e.action)
            for e in session.execute(select(CalendarEvent)).scalars()
        }
    # Nothing but its shape speaks for the weekly block: a class, as for a series.
    assert ("Zant Quibbly", "context", "LEARN") in got
    assert all(
        layer != "context" or action != "LEARN" for t, layer, action in got if t == "Vorpel Snook"
    )


def test_a_third_occurrence_relabels_the_first_two(store, settings):
    weekly, _, _ = _rows()
    with store.transaction() as session:
        session.add_all(weekly[:-1])
    classify_events(store, settings)
    with store.transaction() as session:
        session.add(weekly[-1])
    classify_events(store, settings)  # only the new row changed; its group is relabelled
    with store.session() as session:
        got = [(e.action_layer, e.action) for e in session.execute(select(CalendarEvent)).scalars()]
    assert got == [("context", "LEARN")] * REPEATS
