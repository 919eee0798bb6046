from datetime import date, datetime, time

import pytest

from bridge.config import parse_boundaries
from mappings.slots import SlotKey, day_bounds, slot_bounds, slot_of, slots_between
from tests.conftest import BERLIN


@pytest.mark.parametrize(
    ("clock", "expected"),
    [
        ("04:59", (date(2026, 11, 18), 3)),  # small hours are the previous day's night
        ("05:00", (date(2026, 11, 19), 0)),
        ("11:59", (date(2026, 11, 19), 0)),
        ("12:00", (date(2026, 11, 19), 1)),
        ("17:30", (date(2026, 11, 19), 2)),
        ("23:10", (date(2026, 11, 19), 3)),
    ],
)
def test_slot_of(clock, expected):
    key = slot_of(datetime.combine(date(2026, 11, 19), time.fromisoformat(clock)))
    assert (key.local_date, key.slot) == expected


def test_timestep_follows_rhythmenv():
    key = SlotKey(date(2026, 11, 19), 2)  # Thursday evening
    assert (key.day, key.timestep, key.name) == (3, 14, "evening")
    assert SlotKey(date(2026, 11, 22), 3).timestep == 27


def test_dst_days_have_their_true_length():
    start, end = day_bounds(date(2026, 10, 24), BERLIN)  # clocks go back that night
    assert (end - start).total_seconds() == 25 * 3600
    s, e = slot_bounds(SlotKey(date(2026, 10, 24), 3), BERLIN)
    assert (e - s).total_seconds() == 8 * 3600


def test_slots_between_crosses_days():
    keys = slots_between(SlotKey(date(2026, 11, 18), 3), SlotKey(date(2026, 11, 19), 1))
    assert [(k.local_date.day, k.slot) for k in keys] == [(18, 3), (19, 0), (19, 1)]
    assert keys[0].next() == keys[1] and keys[1].prev() == keys[0]


@pytest.mark.parametrize(
    "values", [["05:00"], ["05:00", "04:00", "06:00", "07:00"], ["x", "1", "2", "3"]]
)
def test_bad_boundaries(values):
    with pytest.raises(ValueError):
        parse_boundaries(values)
