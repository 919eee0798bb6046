"""Meters between data: last night's sleep and the last HRV are carried forward past their
window with a weight and confidence that halve as they age, so a meter is a number the
morning tonight's sync is late, stale after `stale_after_hours`, dropped after that."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np

from mappings.freshness import FreshnessRules
from mappings.inputs import carry_decay
from mappings.meters import MeterRules, compute_slots, empty_events
from mappings.slots import SlotKey
from tests.mappings.test_freshness import BERLIN, readings

MORNING = datetime(2026, 11, 20, 10, 0, tzinfo=BERLIN)


def nights(last_wake: datetime, count: int = 14) -> list[tuple]:
    """Nights of 7 h (23:00-06:00) and a morning HRV, the last one waking on `last_wake`."""
    out = []
    for back in range(count):
        wake = (last_wake - timedelta(days=back)).replace(hour=6, minute=0)
        out += [
            ("sleep", wake - timedelta(hours=7), 7 * 60, None, "asleep"),
            ("hrv_sdnn", wake, 1, 50.0 + (back % 3), ""),
        ]
    return out


def vitality(rows: list[tuple], day: datetime, hours: float = 48.0):
    key = SlotKey(day.date(), 0)
    (res,) = compute_slots(
        readings(*rows),
        empty_events(),
        [key],
        tz=BERLIN,
        now=day,
        rules=MeterRules(freshness=FreshnessRules(stale_after_hours=hours)),
    )
    return res.meters["vitality"]


def test_the_decay_halves_past_the_window_and_drops_beyond_the_horizon():
    kept = carry_decay(np.array([0.0, 24.0, 48.0, 49.0, np.nan]), 48.0)
    assert kept.tolist() == [1.0, 0.5, 0.25, 0.0, 0.0]


def test_last_nights_sleep_missing_carries_the_night_before_with_less_confidence():
    fresh = vitality(nights(MORNING), MORNING)
    late = vitality(nights(MORNING - timedelta(days=1)), MORNING)  # tonight not synced yet
    assert fresh.value is not None and late.value is not None
    assert late.confidence < fresh.confidence
    sleep = next(i for i in late.provenance["inputs"] if i["name"] == "sleep_duration")
    assert sleep["carried_hours"] > 0
    assert "carried_hours" not in next(
        i for i in fresh.provenance["inputs"] if i["name"] == "sleep_duration"
    )
    assert late.provenance["freshness"]["stale"] is False


def test_old_evidence_is_stale_then_dropped():
    # Four days without data: nothing is carried that far; the meter is null, stale.
    gone = vitality(nights(MORNING - timedelta(days=4)), MORNING)
    assert gone.value is None and gone.provenance["freshness"]["stale"] is True
    # With a short horizon (2 h past the window), one missed night drops it all.
    short = vitality(nights(MORNING - timedelta(days=1)), MORNING, hours=2.0)
    assert short.value is None
