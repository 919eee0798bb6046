"""`meters --explain` as a person reads it (issue 41 item 8): the printed numbers multiply
out to the effect, counts of one are singular, a title listed twice is named once."""

from __future__ import annotations

import re

import pytest

from mappings.explain import count_unit, explain_meter, format_value

# Serenity as the meters store it: three inputs with evidence (weights 0.25 + 0.25 + 0.20),
# each effect = weight x (score - 0.5) / 0.70.
PROV = {
    "inputs": [
        {"name": "meeting_density", "score": 0.88, "weight": 0.25, "effect": 0.1357},
        {"name": "day_load", "score": 0.3, "weight": 0.20, "effect": -0.0571},
        {"name": "stress", "score": 0.61, "weight": 0.25, "effect": 0.0393},
    ]
}
LINE = re.compile(r"\(score (\d\.\d+) - 0\.5\) x share (\d\.\d+) .*= ([+-]\d\.\d+)$")


def test_the_printed_numbers_multiply_out_to_the_effect():
    lines = explain_meter("serenity", 0.618, 0.9, PROV)[1:]
    assert len(lines) == 3
    for line in lines:
        score, share, effect = (float(x) for x in LINE.search(line).groups())
        assert (score - 0.5) * share == pytest.approx(effect, abs=6e-4), line
    assert "(weight 0.25/0.70)" in lines[0]


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        (1, "meetings today", "1 meeting today"),
        (2, "meetings today", "2 meetings today"),
        (0, "meetings today", "0 meetings today"),
        (1, "social/family events in 7 days", "1 social/family event in 7 days"),
        (1, "overdue open tasks", "1 overdue open task"),
        (1, "days to the next deadline", "1 day to the next deadline"),
        (1, "min in 7 days", "1 min in 7 days"),
    ],
)
def test_a_count_of_one_is_singular(value, unit, shown):
    assert format_value(value, unit) == shown
    assert count_unit(3, unit) == unit


def test_a_title_listed_twice_is_named_once_with_its_count():
    prov = {
        "inputs": [
            {
                "name": "overdue_tasks",
                "score": 0.55,
                "weight": 0.15,
                "effect": -0.1,
                "value": 3,
                "unit": "overdue open tasks",
                "tasks": {"overdue": ["Pay rent", "Pay rent", "File taxes"]},
            }
        ]
    }
    text = "\n".join(explain_meter("progress", 0.4, 0.8, prov))
    assert "overdue: Pay rent (2x); File taxes" in text
    assert text.count("Pay rent") == 1
