"""`import whoop-export`: WHOOP's "Export my data" CSVs (hand-written in its format), each
row in its own "Cycle timezone", deduplicated with what the WHOOP API stored."""

import dataclasses
import zipfile
from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import select

from bridge.errors import InputError
from bridge.intake.ingest import ImportSummary, import_file, write_records
from bridge.store.models import Reading
from connectors import whoop, whoop_export
from connectors.base import ReadingRecord, Skipped
from tests.conftest import DEMO_NOW, FIXTURES

EXPORT = FIXTURES / "whoop_export"


def _zip(tmp_path, files=None, name="my_whoop_data.zip"):
    path = tmp_path / name
    members = {f.name: f.read_text() for f in sorted(EXPORT.iterdir())} | (files or {})
    with zipfile.ZipFile(path, "w") as zf:
        for member, text in members.items():
            zf.writestr(f"my_whoop_data_2026_11_19/{member}", text)
    return path


def _split(records):
    records = list(records)
    return (
        [r for r in records if isinstance(r, ReadingRecord)],
        [r for r in records if isinstance(r, Skipped)],
    )


def test_cycles_sleeps_and_workouts_are_read_in_each_rows_zone(ctx):
    readings, skipped = _split(whoop_export.read(EXPORT, ctx))
    assert Counter(r.metric for r in readings) == {
        "sleep": 14,  # two nights and a nap: in-bed spans and packed stage totals
        "sleep_score": 3,
        "respiratory_rate": 3,
        "recovery": 2,
        "hrv_rmssd": 2,
        "resting_hr": 2,
        "heart_rate": 2,  # the cycles' average; the current cycle has no end yet
        "workout": 1,
    }
    assert [s.kind for s in skipped] == ["whoop physiological cycles"]
    assert "physiological_cycles.csv:5" in skipped[0].reason
    recoveries = sorted((r.start, r.value) for r in readings if r.metric == "recovery")
    # At the wake onset of the cycle's sleep, in that row's zone: Berlin, then New York.
    assert [(w.isoformat(), v) for w, v in recoveries] == [
        ("2026-11-17T06:58:40+01:00", 64),
        ("2026-11-18T06:20:30-05:00", 41),
    ]
    nap = [r for r in readings if r.origin == "whoop-nap"]
    assert Counter(r.label for r in nap if r.metric == "sleep") == {
        "in_bed": 1,
        "deep": 1,
        "core": 1,
        "awake": 1,
    }
    workout = next(r for r in readings if r.metric == "workout")
    assert workout.label == "running" and workout.value == 45


def test_the_journal_is_read_only_when_turned_on(ctx):
    off, _ = _split(whoop_export.read(EXPORT, ctx))
    assert not [r for r in off if r.metric == "journal"]
    on, _ = _split(whoop_export.read(EXPORT, dataclasses.replace(ctx, whoop_journal=True)))
    answers = {r.label: r.value for r in on if r.metric == "journal"}
    assert answers == {"Have any alcoholic drinks?": 0, "Feel stressed?": 1}


def _api_night_one():
    """The first night, cycle and workout as the WHOOP API returns them (milliseconds)."""
    sleep = {
        "id": "ecfc6a15-4661-442f-a9a4-f160dd7afae8",
        "start": "2026-11-16T22:02:11.412Z",
        "end": "2026-11-17T05:58:40.118Z",
        "timezone_offset": "+01:00",
        "nap": False,
        "score_state": "SCORED",
        "score": {
            "stage_summary": {
                "total_in_bed_time_milli": 476 * 60000,
                "total_awake_time_milli": 36 * 60000,
                "total_light_sleep_time_milli": 230 * 60000,
                "total_slow_wave_sleep_time_milli": 95 * 60000,
                "total_rem_sleep_time_milli": 115 * 60000,
            },
            "respiratory_rate": 14.9,
            "sleep_performance_percentage": 88,
        },
    }
    recovery = {
        "cycle_id": 93845,
        "sleep_id": sleep["id"],
        "created_at": "2026-11-17T06:01:00.000Z",
        "score_state": "SCORED",
        "score": {"recovery_score": 64, "resting_heart_rate": 52, "hrv_rmssd_milli": 48.3},
    }
    cycle = {
        "id": 93845,
        "start": "2026-11-16T22:02:11.412Z",
        "end": "2026-11-17T22:40:05.020Z",
        "timezone_offset": "+01:00",
        "score_state": "SCORED",
        "score": {"average_heart_rate": 64},
    }
    workout = {
        "id": "w-1",
        "start": "2026-11-17T16:30:00.250Z",
        "end": "2026-11-17T17:15:00.900Z",
        "timezone_offset": "+01:00",
        "sport_name": "running",
        "score_state": "SCORED",
    }
    records = whoop.sleep_records(sleep)
    wake = {sleep["id"]: records[0].end}
    records += whoop.recovery_records(recovery, wake)
    records += whoop.cycle_records(cycle)
    records += whoop.workout_records(workout)
    return records


def test_a_night_the_api_already_stored_is_not_stored_again(store, ctx, tmp_path):
    api = _api_night_one()
    with store.transaction() as session:
        write_records(session, "whoop", api, ImportSummary("whoop", "api"), now=DEMO_NOW)
    assert store.count(Reading) == len(api) == 12
    summary = import_file(store, "whoop-export", _zip(tmp_path), ctx)
    # Night one (7 sleep rows, recovery, HRV, resting HR, the cycle's HR) and the run are
    # the API's rows, with the same natural keys: no row is added beside them (they are
    # counted as changed: they now carry the export's fact key).
    assert summary.records == 29
    assert store.count(Reading) == 29
    with store.session() as session:
        sources = set(session.execute(select(Reading.source)).scalars())
    assert sources == {"whoop"}


def test_importing_twice_adds_nothing_and_a_rescored_night_replaces(store, ctx, tmp_path):
    path = _zip(tmp_path)
    first = import_file(store, "whoop-export", path, ctx)
    assert first.new == store.count(Reading) == 29
    assert import_file(store, "whoop-export", path, ctx).skipped_same_file
    # WHOOP re-scored the New York night: more deep, less light sleep, a new performance.
    sleeps = (
        (EXPORT / "sleeps.csv")
        .read_text()
        .replace("71,15.4,400,435,210,80,110", "74,15.4,400,435,190,100,110")
    )
    newer = _zip(tmp_path, {"sleeps.csv": sleeps}, "newer.zip")
    second = import_file(store, "whoop-export", newer, ctx)
    # The old deep and light spans go (REM, packed after 290 minutes either way, stays;
    # the score keeps its instant and takes the new value).
    assert second.replaced == 2
    assert store.count(Reading) == 29
    with store.session() as session:
        scores = sorted(
            session.execute(select(Reading.value).where(Reading.metric == "sleep_score")).scalars()
        )
    assert scores == [74, 88, 100]


@pytest.mark.parametrize(
    ("files", "needle"),
    [
        ({"sleeps.csv": "Sleep start,Sleep end\n1,2\n"}, "sleeps.csv: no 'sleep onset' column"),
        (
            {"physiological_cycles.csv": "Cycle start time,Cycle timezone\nx,Mars+1\n"},
            None,
        ),
    ],
)
def test_bad_files(store, ctx, tmp_path, files, needle):
    path = tmp_path / "bad.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for member, text in files.items():
            zf.writestr(member, text)
    if needle is None:  # a bad zone is one bad row, counted
        summary = import_file(store, "whoop-export", path, ctx)
        assert summary.skipped == {"whoop physiological cycles": 1}
        return
    with pytest.raises(InputError, match=needle):
        import_file(store, "whoop-export", path, ctx)
    assert store.count(Reading) == 0


def test_an_archive_without_whoop_files_is_refused(store, ctx, tmp_path):
    path = tmp_path / "x.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("readme.txt", "hi")
    with pytest.raises(InputError, match="is this WHOOP's 'Export my data' ZIP"):
        import_file(store, "whoop-export", path, ctx)


def test_offsets():
    assert whoop_export.zone("UTC+05:30", None).utcoffset(None) == timedelta(hours=5.5)
    assert whoop_export.zone("UTC-04:00", None).utcoffset(None) == timedelta(hours=-4)
    with pytest.raises(ValueError, match="Mars"):
        whoop_export.zone("Mars+1", None)
