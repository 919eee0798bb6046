"""Honest freshness: each meter says how old its freshest input is; too little evidence is
withheld with a reason, not shown as a number from one weak input."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pandas as pd
import pytest

from mappings.freshness import FreshnessRules, human_age
from mappings.meters import READING_COLUMNS, MeterRules, compute_slots, empty_events
from mappings.slots import SlotKey, parse_slot

BERLIN = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 11, 20, 9, 0, tzinfo=BERLIN)
TODAY = SlotKey(NOW.date(), 0)


def readings(*rows):
    return pd.DataFrame(
        [
            (metric, start, start + timedelta(minutes=minutes), value, label, "Watch", 60)
            for metric, start, minutes, value, label in rows
        ],
        columns=READING_COLUMNS,
    )


def history(days_old: int) -> pd.DataFrame:
    """Two weeks of nights, HRV and workouts that stop `days_old` days before NOW."""
    out = []
    for back in range(days_old, days_old + 14):
        night = (NOW - timedelta(days=back)).replace(hour=23, minute=0) - timedelta(days=1)
        out += [
            ("sleep", night, 7 * 60, None, "asleep"),
            ("hrv_sdnn", night + timedelta(hours=4), 1, 50.0, ""),
            ("workout", night + timedelta(hours=10), 40, 40.0, ""),
        ]
    return readings(*out)


def test_fresh_inputs_are_not_stale():
    (res,) = compute_slots(history(0), empty_events(), [TODAY], tz=BERLIN, now=NOW)
    fresh = res.meters["vitality"].provenance["freshness"]
    assert res.meters["vitality"].value is not None
    assert fresh["stale"] is False and fresh["age_hours"] < 24
    assert fresh["newest"].endswith("Z")


def test_days_old_inputs_are_stale_and_a_weak_rest_is_withheld():
    (res,) = compute_slots(
        history(5),
        empty_events(),
        [TODAY],
        tz=BERLIN,
        now=NOW,
        rules=MeterRules(freshness=FreshnessRules(min_confidence=0.15)),
    )
    vit = res.meters["vitality"]
    fresh = vit.provenance["freshness"]
    assert fresh["stale"] is True and 4 * 24 < fresh["age_hours"] < 6 * 24
    # Only the 7-day workout habit still has evidence: a number from it alone would look
    # as sure as a full night's data, so the meter is null and says why.
    assert vit.value is None and vit.confidence is None
    assert vit.provenance["reason"].startswith("too little fresh evidence: confidence 0.")
    assert "from workouts" in vit.provenance["reason"] and "5 days old" in vit.provenance["reason"]
    assert 0 <= vit.provenance["withheld"] <= 1


def test_without_a_minimum_the_weak_value_stays_but_is_stale():
    (res,) = compute_slots(history(5), empty_events(), [TODAY], tz=BERLIN, now=NOW)
    vit = res.meters["vitality"]
    assert vit.value is not None and vit.provenance["freshness"]["stale"] is True
    (strict,) = compute_slots(
        history(0),
        empty_events(),
        [TODAY],
        tz=BERLIN,
        now=NOW,
        rules=MeterRules(freshness=FreshnessRules(stale_after_hours=1)),
    )
    assert strict.meters["vitality"].provenance["freshness"]["stale"] is True


@pytest.mark.parametrize(
    ("hours", "text"),
    [(0.5, "30 min"), (5.2, "5 h"), (47, "47 h"), (120, "5 days"), (None, "unknown")],
)
def test_human_ages(hours, text):
    assert human_age(hours) == text


@pytest.mark.parametrize(("given", "slot"), [("morning", 0), ("Night", 3), ("2", 2), (1, 1)])
def test_slots_by_name_or_number(given, slot):
    assert parse_slot(given) == slot


def test_an_unknown_slot_names_the_choices():
    with pytest.raises(ValueError, match=r"'noon' is not a slot; use one of morning \(0\)"):
        parse_slot("noon")
