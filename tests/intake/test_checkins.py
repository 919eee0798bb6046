from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from sqlmodel import select

from bridge.errors import InputError
from bridge.intake.checkins import import_checkins, parse_answers, record_checkins
from bridge.store.models import CheckIn
from mappings.slots import DEFAULT_BOUNDARIES

BERLIN = ZoneInfo("Europe/Berlin")


def _rows(store):
    with store.session() as s:
        return sorted(s.exec(select(CheckIn)).all(), key=lambda r: (r.local_date, r.slot, r.item))


def test_a_second_checkin_in_the_same_slot_replaces_the_first(store):
    at = datetime(2026, 11, 2, 7, 0, tzinfo=UTC)  # 08:00 in Berlin: the morning slot
    record_checkins(store, {"energy": 2, "stress": 4}, at, BERLIN, DEFAULT_BOUNDARIES)
    record_checkins(
        store, {"energy": 5}, at.replace(hour=9), BERLIN, DEFAULT_BOUNDARIES, source="web"
    )
    rows = _rows(store)
    assert [(r.item, r.value, r.score, r.slot, r.source) for r in rows] == [
        ("energy", 5.0, 1.0, 0, "web"),
        ("stress", 4.0, 0.75, 0, "cli"),
    ]
    # The afternoon is a new slot: its answer is kept beside the morning's.
    record_checkins(store, {"energy": 3}, at.replace(hour=13), BERLIN, DEFAULT_BOUNDARIES)
    assert len(_rows(store)) == 3


def test_answers_are_checked_item_by_item():
    assert parse_answers(["energy=4", "Sleep-Quality=2"]) == {"energy": 4.0, "sleep_quality": 2.0}
    for bad, word in (("energy=9", "1-5"), ("vibes=3", "unknown"), ("energy", "item=value")):
        with pytest.raises(InputError, match=word):
            parse_answers([bad])
    with pytest.raises(InputError):
        parse_answers([])


CSV = """timestamp,item,value,scale_min,scale_max
2026-10-01T07:10:00Z,readiness,7,0,10
2026-10-01T07:10:00Z,stress,2,1,5
2026-10-01T09:30:00Z,readiness,8,0,10
2026-10-02 08:00,mood,4,1,5
2026-10-02T08:00:00Z,vibes,3,1,5
yesterday,mood,3,1,5
2026-10-03T08:00:00Z,mood,six,1,5
2026-10-03T08:00:00Z,mood,6,1,5
2026-10-03T08:00:00Z,mood,3,5,1
"""


def test_a_checkin_history_is_rescaled_bad_rows_counted_and_a_rerun_adds_nothing(store, tmp_path):
    path = tmp_path / "checkins.csv"
    path.write_text(CSV)
    first = import_checkins(store, path, BERLIN, DEFAULT_BOUNDARIES)
    assert (first.rows, first.new) == (9, 3)
    assert first.skipped == {
        "unknown item": 1,
        "bad timestamp": 1,
        "bad number": 1,
        "off its scale": 2,
    }
    rows = _rows(store)
    # The later readiness of the same morning wins; 8 on 0-10 is 0.8.
    assert [(r.item, r.score) for r in rows] == [
        ("readiness", 0.8),
        ("stress", 0.25),
        ("mood", 0.75),
    ]
    # A naive timestamp is the person's wall time (08:00 Berlin).
    assert rows[2].at_utc.replace(tzinfo=UTC) == datetime(2026, 10, 2, 6, 0, tzinfo=UTC)
    again = import_checkins(store, path, BERLIN, DEFAULT_BOUNDARIES)
    assert again.new == 0 and len(_rows(store)) == 3
    assert "3 new" in first.line() and "5 skipped" in first.line()


def test_a_file_without_the_columns_is_refused_and_nothing_is_written(store, tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("when,what,value\n2026-10-01T07:10:00Z,mood,3\n")
    with pytest.raises(InputError, match=r"c\.csv: no column timestamp"):
        import_checkins(store, path, BERLIN, DEFAULT_BOUNDARIES)
    assert _rows(store) == []
