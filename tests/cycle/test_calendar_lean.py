"""A calendar the person's answers say is mostly one kind of thing (a timetable, a club's
fixtures) lends that kind to its titles nothing else knows."""

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from bridge.cycle.classify import classify_events
from bridge.learning.corrections import add_correction
from bridge.store.models import CalendarEvent
from mappings.classifier import EventInfo
from mappings.classifier_layers import LEAN_MIN, default_classifier
from mappings.classifier_overrides import Correction, Overrides, title_pattern
from tests.helpers import calendar_event

MONDAY = datetime(2026, 11, 2, 9, tzinfo=UTC)
TIMETABLE = "/cal/timetable.ics"
CLASSES = ["Plonk Varu", "Quazzle Mip", "Dreeb Holt", "Snarv Ekko"]  # no rule knows these


def _answered(pairs):
    clf = default_classifier()
    clf.overrides = Overrides([Correction(title_pattern(t), a, t) for t, a in pairs])
    return clf


def test_a_calendar_leans_only_when_the_answers_clearly_say_so():
    learn = [(t, "LEARN") for t in CLASSES]
    moves = [("Zib Zab", "EXERCISE"), ("Zub Zob", "EXERCISE"), ("Zeb Zeb", "EXERCISE")]
    clf = _answered([*learn, *moves])
    assert clf.calendar_lean([*CLASSES[:LEAN_MIN], "Xq7 Blorp"]) == "LEARN"
    # Too few answered titles, or no clear majority among them: no lean.
    assert clf.calendar_lean([*CLASSES[: LEAN_MIN - 1], "Xq7 Blorp"]) == ""
    assert clf.calendar_lean([*CLASSES[:LEAN_MIN], *(t for t, _ in moves)]) == ""
    # Retyped copies of one answered title count once.
    assert clf.calendar_lean(["Plonk Varu", "plonk varu", "Plonk Varu 18:00", "Xq7"]) == ""
    # What the rules know does not count: a calendar they misread must not spread it.
    assert (
        default_classifier().calendar_lean(
            ["Algebra lecture", "Physics seminar", "Chemistry tutorial"]
        )
        == ""
    )


def test_the_lean_fills_in_only_what_nothing_else_knows_well():
    clf = default_classifier()
    titles = ("Xq7 Blorp", "Gym", "Kindergarten")
    lean = [EventInfo(title=t, calendar_lean="LEARN") for t in titles]
    unknown, ruled, sure_model = clf.classify_many(lean)
    assert (unknown.action, unknown.layer) == ("LEARN", "context")
    assert (ruled.action, ruled.layer) == ("EXERCISE", "rules")
    assert (sure_model.action, sure_model.layer) == ("FAMILY_TIME", "model")
    # Without a lean the unknown title stays unknown.
    assert clf.classify(EventInfo(title="Xq7 Blorp")).action == "UNCLASSIFIED"


def _week(titles, calendar_id, weeks=0):
    start = MONDAY + timedelta(weeks=weeks)
    return [
        calendar_event(
            f"{calendar_id}-{weeks}-{n}", t, start + timedelta(days=n), 90, calendar_id=calendar_id
        )
        for n, t in enumerate(titles)
    ]


def _labels(store):
    with store.session() as session:
        rows = session.execute(select(CalendarEvent)).scalars()
        return {(e.calendar_id, e.title): (e.action, e.action_layer) for e in rows}


def test_the_daemon_reads_each_calendar_s_lean_from_the_answers(store, settings):
    with store.transaction() as session:
        session.add_all(_week([*CLASSES[:LEAN_MIN], "Xq7 Blorp"], TIMETABLE))
        session.add_all(_week(["Xq7 Blorp"], "/cal/personal.ics"))
    for title in CLASSES[:LEAN_MIN]:
        add_correction(store, title, "LEARN")
    classify_events(store, settings)
    got = _labels(store)
    assert got[TIMETABLE, "Xq7 Blorp"] == ("LEARN", "context")
    assert got[TIMETABLE, CLASSES[0]] == ("LEARN", "override")
    assert got["/cal/personal.ics", "Xq7 Blorp"][0] == "UNCLASSIFIED"


def test_a_calendar_that_comes_to_lean_relabels_its_older_events(store, settings):
    for title in CLASSES[:LEAN_MIN]:
        add_correction(store, title, "LEARN")
    with store.transaction() as session:
        session.add_all(_week([*CLASSES[: LEAN_MIN - 1], "Xq7 Blorp"], TIMETABLE))
    classify_events(store, settings)
    assert _labels(store)[TIMETABLE, "Xq7 Blorp"][0] == "UNCLASSIFIED"
    # A third answered title arrives (no new answer, so the classifier is the same): the
    # calendar's lean moved, so its unknown title follows.
    with store.transaction() as session:
        session.add_all(_week([CLASSES[LEAN_MIN - 1]], TIMETABLE, weeks=1))
    classify_events(store, settings)
    assert _labels(store)[TIMETABLE, "Xq7 Blorp"] == ("LEARN", "context")
    # And back: when its answers no longer lean one way, the title is unknown again.
    for title in ("Zib Zab", "Zub Zob", "Zeb Zeb"):
        add_correction(store, title, "EXERCISE")
    with store.transaction() as session:
        session.add_all(_week(["Zib Zab", "Zub Zob", "Zeb Zeb"], TIMETABLE, weeks=2))
    classify_events(store, settings)
    assert _labels(store)[TIMETABLE, "Xq7 Blorp"][0] == "UNCLASSIFIED"


def test_an_unreadable_stored_lean_relabels_rather_than_fails(store, settings):
    from bridge.cycle.classify import CALENDAR_LEANS_KEY

    for title in CLASSES[:LEAN_MIN]:
        add_correction(store, title, "LEARN")
    with store.transaction() as session:
        session.add_all(_week([*CLASSES[:LEAN_MIN], "Xq7 Blorp"], TIMETABLE))
    classify_events(store, settings)
    with store.transaction() as session:
        store.set_meta(session, CALENDAR_LEANS_KEY, "{not json")
        session.add_all(_week(["Xq7 Blorp"], TIMETABLE, weeks=1))
    classify_events(store, settings)
    assert _labels(store)[TIMETABLE, "Xq7 Blorp"] == ("LEARN", "context")
    assert store.get_meta(CALENDAR_LEANS_KEY) == '{"/cal/timetable.ics": "LEARN"}'
