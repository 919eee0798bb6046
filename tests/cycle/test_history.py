"""Meters for the whole history: computed from the first day with data, read back by range."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import func, select, update
from typer.testing import CliRunner

from bridge.cli.main import app
from bridge.cycle.meters import STRAY_GAP_DAYS, first_data_day, recompute_meters
from bridge.intake.ingest import import_file
from bridge.out.history import stored_range
from bridge.store import upsert
from bridge.store.models import MeterSnapshot, Reading
from connectors.base import ReadingRecord
from tests.conftest import DEMO_NOW
from tests.cycle.test_meter_recompute import add_reading, load_sample
from tests.cycle.test_meter_recompute import snapshots as rows
from tests.helpers import validate_snapshot, write_config


@pytest.fixture
def loaded(store, ctx):
    return load_sample(store, ctx)


def cli(settings, tmp_path, *args):
    cfg = write_config(tmp_path / "config.toml", settings.data_path)
    return CliRunner().invoke(app, ["--config", str(cfg), *args])


def test_every_slot_from_the_first_day_with_data_is_computed(loaded, settings):
    assert first_data_day(loaded, settings) == date(2026, 10, 17)
    calls = []
    done = recompute_meters(loaded, settings, DEMO_NOW, progress=lambda d, t: calls.append((d, t)))
    assert stored_range(loaded) == (date(2026, 10, 17), date(2026, 11, 19))
    assert done == loaded.count(MeterSnapshot) == 33 * 4 + 1
    assert calls[-1] == (done, done)
    # Weeks before the export window have real values, not nulls.
    old = rows(loaded)[(date(2026, 10, 25), 0)]
    assert old[0] is not None and old[1] is not None


def test_a_backfill_in_chunks_equals_one_pass(loaded, settings, store):
    recompute_meters(loaded, settings, DEMO_NOW, full=True)
    one_pass = rows(loaded)
    calls = []
    recompute_meters(
        loaded, settings, DEMO_NOW, full=True, chunk_days=5, progress=lambda d, t: calls.append(d)
    )
    assert rows(loaded) == one_pass  # deltas across chunk borders included
    assert len(calls) == 7 and calls == sorted(calls)  # 34 days in chunks of 5


def test_older_data_arriving_later_extends_the_history(loaded, settings):
    recompute_meters(loaded, settings, DEMO_NOW)
    # A backfill brings a night and a resting heart rate from early September.
    night = datetime(2026, 9, 3, 23, 30, tzinfo=UTC)
    recs = [
        ReadingRecord("sleep", night, night + timedelta(hours=7), None, origin="Watch"),
        ReadingRecord("resting_hr", night + timedelta(hours=8), night + timedelta(hours=8), 55.0),
    ]
    with loaded.transaction() as session:
        upsert(
            session,
            Reading,
            [r.row("apple_health", DEMO_NOW.astimezone(UTC)) for r in recs],
            keys=("source", "metric", "origin", "start_utc", "end_utc", "label"),
        )
    before = rows(loaded)
    done = recompute_meters(loaded, settings, DEMO_NOW)
    assert stored_range(loaded)[0] == date(2026, 9, 3)
    # The new days, and the old slots the new data reaches (baselines look 60 days back):
    # here all of them, each once.
    assert done == loaded.count(MeterSnapshot) == 77 * 4 + 1
    after = rows(loaded)
    assert after[(date(2026, 9, 4), 0)][0] is not None  # the night shows in the next morning
    assert set(before) < set(after)


def test_a_few_stray_old_records_do_not_start_the_history(loaded, settings):
    """Issue 41 item 8: a handful of 2014 readings (an old phone) before the sample's
    October 2026 made the first cycle compute every slot since 2014 (17,834 of them, mostly
    empty); the history now starts where the data is dense, after the last gap of more than
    STRAY_GAP_DAYS without any reading or event."""
    for day in (3, 9, 21):
        add_reading(loaded, "resting_hr", datetime(2014, 6, day, 7, 0, tzinfo=UTC), 61.0)
    assert first_data_day(loaded, settings, DEMO_NOW) == date(2026, 10, 17)
    assert recompute_meters(loaded, settings, DEMO_NOW) == 33 * 4 + 1
    assert stored_range(loaded) == (date(2026, 10, 17), date(2026, 11, 19))
    # Only data before `now` is where the walk back starts.
    assert first_data_day(loaded, settings, datetime(2026, 10, 1, tzinfo=UTC)) == date(2014, 6, 3)


def test_a_gap_shorter_than_the_stray_gap_keeps_the_older_data(loaded, settings):
    old = datetime(2026, 10, 17, 7, 0, tzinfo=UTC) - timedelta(days=STRAY_GAP_DAYS - 5)
    add_reading(loaded, "resting_hr", old, 58.0)
    assert first_data_day(loaded, settings, DEMO_NOW) == old.date()
    add_reading(loaded, "resting_hr", old - timedelta(days=STRAY_GAP_DAYS + 5), 58.0)
    assert first_data_day(loaded, settings, DEMO_NOW) == old.date()


def test_history_days_limits_how_far_back(loaded, settings):
    limited = settings.model_copy(
        update={"meters": settings.meters.model_copy(update={"history_days": 10})}
    )
    assert recompute_meters(loaded, limited, DEMO_NOW) == 9 * 4 + 1
    assert stored_range(loaded) == (date(2026, 11, 10), date(2026, 11, 19))


def test_meters_for_a_range_by_slot_name_as_csv_and_json(loaded, settings, tmp_path):
    recompute_meters(loaded, settings, DEMO_NOW)
    args = ["meters", "--from", "2026-10-20", "--to", "2026-10-26"]
    by_name = cli(settings, tmp_path, *args, "--slot", "morning", "--csv")
    assert by_name.exit_code == 0, by_name.output
    table = list(csv.DictReader(io.StringIO(by_name.output)))
    assert [r["date"] for r in table] == [f"2026-10-{d}" for d in range(20, 27)]
    assert {r["slot_name"] for r in table} == {"morning"}
    assert all(r["vitality_stale"] in ("true", "false") for r in table)
    assert float(table[0]["vitality_age_hours"]) >= 0
    by_number = cli(settings, tmp_path, *args, "--slot", "0", "--csv")
    assert by_number.output == by_name.output
    as_json = json.loads(cli(settings, tmp_path, *args, "--json").output)
    assert len(as_json) == 7 * 4 and as_json[0]["date"] == "2026-10-20"
    assert set(as_json[0]["freshness"]) == {
        "vitality",
        "cognition",
        "progress",
        "serenity",
        "connection",
    }
    text = cli(settings, tmp_path, *args, "--slot", "evening")
    assert text.exit_code == 0
    lines = text.output.splitlines()
    assert lines[0].split()[:2] == ["date", "slot"]
    assert lines[1].startswith("2026-10-20  evening")
    assert "freshest input (2026-10-26 evening): vitality" in text.output


def test_export_since_covers_history(loaded, settings, tmp_path):
    recompute_meters(loaded, settings, DEMO_NOW)
    out = tmp_path / "export.json"
    result = cli(settings, tmp_path, "export", "--since", "2026-10-20", "--out", str(out))
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    validate_snapshot(doc)
    assert doc["slots"][0]["date"] == "2026-10-20"
    with loaded.session() as session:
        stored = session.execute(
            select(func.count()).where(MeterSnapshot.local_date >= date(2026, 10, 20))
        ).scalar_one()
    # Everything stored from then up to the current slot (the snapshot stops at now).
    assert 0 < len(doc["slots"]) <= stored


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--from", "2026-11-10", "--to", "2026-11-01"], "--from 2026-11-10 is after --to"),
        (["--from", "1900-01-01", "--to", "2026-11-01"], "--from 1900-01-01: use a date between"),
        (["--date", "2026-13-01"], "--date '2026-13-01': use YYYY-MM-DD"),
        (["--date", "2026-11-10", "--slot", "noon"], "--slot: 'noon' is not a slot; use one of"),
        (["--date", "2026-11-10", "--from", "2026-11-01"], "--date is one day"),
    ],
)
def test_bad_ranges_are_one_line_and_exit_2(loaded, settings, tmp_path, args, needle):
    result = cli(settings, tmp_path, "meters", *args)
    assert result.exit_code == 2, result.output
    assert needle in result.output and len(result.output.strip().splitlines()) == 1


def test_a_range_without_data_says_where_the_data_is(loaded, settings, tmp_path):
    recompute_meters(loaded, settings, DEMO_NOW)
    result = cli(settings, tmp_path, "meters", "--from", "2025-01-01", "--to", "2025-01-31")
    assert result.exit_code == 0
    assert result.output.strip() == (
        "no meters stored from 2025-01-01 to 2025-01-31; "
        "stored meters run from 2026-10-17 to 2026-11-19"
    )


def test_a_ticked_off_task_recomputes_from_its_day_not_the_whole_history(loaded, settings, ctx):
    from bridge.store.models import Task, TaskChange
    from tests.conftest import SAMPLE

    import_file(loaded, "ics", SAMPLE / "tasks.ics", ctx)
    recompute_meters(loaded, settings, DEMO_NOW)
    with loaded.session() as session:
        # The open task due last (late on the 25th, UTC): its deadline reaches back a week.
        task = session.execute(
            select(Task).where(Task.status != "completed").order_by(Task.due_utc.desc()).limit(1)
        ).scalar_one()
    assert task.due_utc.date() == date(2026, 11, 25)
    done_at = (DEMO_NOW - timedelta(days=2)).astimezone(UTC)
    stamp = datetime.now(UTC) + timedelta(seconds=1)  # after the import's updates
    with loaded.transaction() as session:
        session.execute(
            update(Task).where(Task.id == task.id).values(status="completed", updated_at=stamp)
        )
        session.add(
            TaskChange(task_id=task.id, kind="completed", at_utc=done_at, recorded_at=stamp)
        )
    done = recompute_meters(loaded, settings, DEMO_NOW)
    # From the day before it was ticked off (the 16th) to this morning, not 133 slots.
    assert done == 3 * 4 + 1
    incremental = rows(loaded)
    recompute_meters(loaded, settings, DEMO_NOW, full=True)

    assert rows(loaded) == incremental


@pytest.fixture
def long_history(store, settings):
    """200 days of the benchmark's generated data (no minute heart rate), meters computed."""
    from benchmarks.meters import load_into, synth

    readings, events = synth(date(2026, 5, 3), 200)
    load_into(store, readings[readings["metric"] != "heart_rate"], events)
    recompute_meters(store, settings, DEMO_NOW)
    return store


def test_over_long_history_a_cycle_reads_recent_prints_and_still_sees_old_changes(
    long_history, settings
):
    store = long_history
    assert first_data_day(store, settings) == date(2026, 5, 2)
    # Nothing new: only the current slot; prints of the recent weeks only, nothing noted.
    from bridge.cycle.meter_changes import MeterState
    from bridge.store.models import MeterChange

    assert recompute_meters(store, settings, DEMO_NOW) == 1
    state = MeterState.load(store)
    assert "r:2026-05-10" not in state.days and "r:2026-11-01" in state.days
    assert store.count(MeterChange) == 0
    # A reading from June changes (a re-import): recomputed from the day before it on,
    # the same rows as a full recompute.
    add_reading(store, "resting_hr", datetime(2026, 6, 10, 7, 0, tzinfo=UTC), 80.0)
    done = recompute_meters(store, settings, DEMO_NOW)
    assert done == ((date(2026, 11, 19) - date(2026, 6, 9)).days) * 4 + 1
    incremental = rows(store)
    recompute_meters(store, settings, DEMO_NOW, full=True)
    assert rows(store) == incremental
    assert recompute_meters(store, settings, DEMO_NOW) == 1
    # Something new today: only this morning (and what it reaches), not 200 days.
    add_reading(store, "hrv_sdnn", DEMO_NOW.replace(hour=3).astimezone(UTC), 30.0)
    assert recompute_meters(store, settings, DEMO_NOW) <= 4 * 2 + 1
