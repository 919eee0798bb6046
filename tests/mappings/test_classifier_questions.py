"""The question list, pure: grouping near-duplicates, ranking by the minutes an answer is
likely to set right, never asking an answered group or a declared type."""

import pytest

from mappings.classifier_overrides import Correction, Overrides, group_key
from mappings.classifier_questions import Occurrence, doubt, questions


def test_near_duplicates_share_a_group_but_another_word_does_not():
    assert group_key("Trening") == group_key("Trening 18:00") == group_key("trening!")
    assert group_key("TRENING 18h-19h30") == "trening"
    assert group_key("Trening odwołany") != group_key("Trening")
    assert group_key("Sprint 12 review") == group_key("Sprint 13 review")
    assert group_key("Basen") != group_key("Trening")


def test_a_title_that_is_only_a_time_is_a_group_of_its_own():
    # A roster's shifts are often titled by their hours alone: each is a group, asked and
    # answered like any other (before, their key was empty, so never asked about).
    assert group_key("06:00-14:00") == group_key("06:00 - 14:00") != ""
    assert group_key("06:00-14:00") != group_key("14:00-22:00")
    assert group_key("7h-15h") not in ("", group_key("Trening 7h-15h"))
    shifts = [_occ("06:00-14:00", 480) for _ in range(5)] + [_occ("Qux", 30)]
    assert [q.title for q in questions(shifts, 2)] == ["06:00-14:00", "Qux"]
    answered = Overrides([Correction("#:#-#:#", "ADMIN_WORK", "06:00-14:00")])
    assert answered.match("06:00 - 14:00").action == "ADMIN_WORK"


def _occ(title, minutes=60.0, action="UNCLASSIFIED", confidence=0.0, layer="none"):
    return Occurrence(title, minutes, action, confidence, layer)


def test_the_groups_with_most_minutes_likely_set_right_come_first():
    events = [
        *[_occ("Ploof") for _ in range(4)],
        _occ("Ploof 18:00", 90),
        _occ("ploof"),
        *[_occ("Zorblax", 120, "LEARN", 0.5, "context") for _ in range(2)],  # 240 x 0.40
        *[_occ("Krumpel", 90, "SOCIALIZE", 0.7, "model") for _ in range(2)],  # 180 x 0.58
        *[_occ("Gym", 600, "EXERCISE", 0.9, "rules") for _ in range(3)],  # 1800 x 0.06
        _occ("Yoga", 300, "EXERCISE", 0.9, "rules"),  # 300 x 0.06: after Qux
        _occ("Qux", 30),
        _occ("Ploof odwołany", 60, "NOT_AN_ACTION", 0.9, "rules"),
        _occ("Christmas", 1440, "NOT_AN_ACTION", 0.95, "event_type"),  # the calendar says so
    ]
    got = [q.as_dict() for q in questions(events, 5)]
    assert got == [
        {
            "title": "Ploof",
            "minutes": 390,
            "occurrences": 6,
            "guess": "UNCLASSIFIED",
            "confidence": 0.0,
        },
        {"title": "Gym", "minutes": 1800, "occurrences": 3, "guess": "EXERCISE", "confidence": 0.9},
        {
            "title": "Krumpel",
            "minutes": 180,
            "occurrences": 2,
            "guess": "SOCIALIZE",
            "confidence": 0.7,
        },
        {"title": "Zorblax", "minutes": 240, "occurrences": 2, "guess": "LEARN", "confidence": 0.5},
        {
            "title": "Qux",
            "minutes": 30,
            "occurrences": 1,
            "guess": "UNCLASSIFIED",
            "confidence": 0.0,
        },
    ]
    assert [q.title for q in questions(events, 1)] == ["Ploof"]
    everything = [q.title for q in questions(events, 20)]
    assert everything[5:] == ["Yoga", "Ploof odwołany"]  # "Christmas" is never asked


def test_every_layer_has_a_doubt():
    from mappings.classifier import LAYERS
    from mappings.classifier_questions import DOUBT, NEVER_ASKED, OWN_SAY

    assert set(DOUBT) | NEVER_ASKED | OWN_SAY == set(LAYERS)
    assert not set(DOUBT) & (NEVER_ASKED | OWN_SAY)
    assert doubt("LEARN", "llm", 0.8) == pytest.approx(0.2)
    assert doubt("UNCLASSIFIED", "rules", 0.9) == 1.0


def test_an_answered_group_is_never_asked_again():
    events = [_occ("Ploof"), _occ("Ploof 18:00"), _occ("Zorblax", 30)]
    assert [q.title for q in questions(events, answered={group_key("PLOOF")})] == ["Zorblax"]
    # An occurrence labelled by the person's answer closes its group too.
    events.append(_occ("ploof", 60, "EXERCISE", 1.0, "override"))
    assert [q.title for q in questions(events)] == ["Zorblax"]


def test_an_answer_covers_the_whole_group_and_nothing_else():
    over = Overrides([Correction("ploof", "EXERCISE", "Ploof")])
    assert over.match("Ploof 18:00").action == "EXERCISE"
    assert over.match("PLOOF!").action == "EXERCISE"
    assert over.match("Ploof odwołany") is None
