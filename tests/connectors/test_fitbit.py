"""`import fitbit`: a hand-written Takeout tree in Fitbit's formats, as a folder and as a
ZIP; a real PMData person when ../shared/datasets is there."""

import json
import shutil
import time
import zipfile
from collections import Counter
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from bridge.cli.main import app
from bridge.errors import InputError
from bridge.intake.ingest import import_file
from bridge.store.models import Reading
from connectors import fitbit
from connectors.base import ReadContext, ReadingRecord, Skipped
from tests.conftest import DEMO_NOW, FIXTURES
from tests.helpers import write_config
from tests.shared import DATASETS, missing_reason

TAKEOUT = FIXTURES / "fitbit" / "takeout"
FITBIT = "Takeout/Fitbit/"
SLEEP = FITBIT + "Global Export Data/sleep-2026-11-16.json"


def _copy(tmp_path: Path, name: str = "export") -> Path:
    return Path(shutil.copytree(TAKEOUT, tmp_path / name))


def _zip(folder: Path, path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                zf.write(file, file.relative_to(folder).as_posix())
    return path


def _split(records):
    records = list(records)
    readings = [r for r in records if isinstance(r, ReadingRecord)]
    skipped = [r for r in records if isinstance(r, Skipped)]
    return readings, skipped


def test_every_file_of_the_takeout_tree_is_read(ctx):
    readings, skipped = _split(fitbit.read(TAKEOUT, ctx))
    assert Counter(r.metric for r in readings) == {
        "sleep": 17,
        "sleep_score": 2,
        "restoration": 2,  # the scores' restoration parts
        "resting_hr": 2,  # the 0 of a day without a value is dropped
        "steps": 2,
        "heart_rate": 2,
        "active_minutes": 2,
        "hrv_rmssd": 1,
        "respiratory_rate": 1,
        "stress_score": 1,  # the failed calculation is dropped
        "readiness_score": 1,
    }
    # A log without endTime, a score of "n/a", a step count of "lots": counted, not fatal.
    assert Counter(s.kind for s in skipped) == {
        "fitbit sleep log": 1,
        "fitbit sleep score": 1,
        "fitbit steps": 1,
    }
    assert all(SLEEP in s.reason or "Takeout" in s.reason for s in skipped)


def test_a_stage_night_becomes_in_bed_and_stages_with_short_wakes_cut_out(ctx):
    readings, _ = _split(fitbit.read(TAKEOUT, ctx))
    night = [r for r in readings if r.metric == "sleep" and r.revision == "sleep:2026-11-18"]
    main = [r for r in night if r.start.hour >= 23 or r.start.hour < 12]
    minutes = Counter()
    for r in main:
        minutes[r.label] += (r.end - r.start).total_seconds() / 60
        assert r.value == pytest.approx((r.end - r.start).total_seconds() / 60)
    # light -> core; the 90 s and 60 s short wakes are awake, not light or REM; the
    # 10 minutes of "unknown" are in bed in no stage.
    assert minutes == {
        "in_bed": 450,
        "awake": 32.5,
        "core": 238.5,
        "deep": 80,
        "rem": 89,
    }
    in_bed = next(r for r in main if r.label == "in_bed")
    assert in_bed.start.isoformat() == "2026-11-17T23:10:00+01:00"  # local wall time
    assert in_bed.origin == "Fitbit"
    nap = [r for r in night if r.start.hour == 14]
    assert Counter(r.label for r in nap) == {"in_bed": 1, "asleep": 2, "awake": 2}


def test_scores_and_daily_values(ctx):
    readings, _ = _split(fitbit.read(TAKEOUT, ctx))
    by = {(r.metric, r.start.date().isoformat()): r for r in readings}
    score = by[("sleep_score", "2026-11-18")]
    # Dated at the end of its sleep log, not at its "Z" timestamp read as UTC.
    assert score.start == score.end and score.start.isoformat() == "2026-11-18T06:40:00+01:00"
    assert score.value == 82 and score.revision == "score:2026-11-18"
    # Its restoration part, at the same moment and in the same fact (re-scored together).
    part = by[("restoration", "2026-11-18")]
    assert (part.start, part.value, part.revision) == (score.start, 20, "score:2026-11-18")
    # A score whose log is not in the export: its timestamp, as local wall time.
    assert by[("sleep_score", "2026-11-17")].start.isoformat() == "2026-11-17T07:05:00+01:00"
    hrv = by[("hrv_rmssd", "2026-11-18")]
    assert hrv.value == pytest.approx(38.412) and hrv.label == "night"
    assert hrv.end - hrv.start == timedelta(days=1)
    assert by[("resting_hr", "2026-11-16")].value == pytest.approx(55.21)
    assert by[("stress_score", "2026-11-18")].value == 76
    assert by[("readiness_score", "2026-11-18")].value == 68
    steps = sorted((r.start.hour, r.value) for r in readings if r.metric == "steps")
    assert steps == [(7, 110), (8, 40)]  # summed per local hour
    hr = sorted((r.start.hour, r.value) for r in readings if r.metric == "heart_rate")
    assert hr == [(7, 62), (8, 71)]  # averaged per local hour


def test_a_folder_and_its_zip_are_the_same_export(ctx, tmp_path):
    folder = [r for r in fitbit.read(TAKEOUT, ctx) if isinstance(r, ReadingRecord)]
    zipped = _zip(TAKEOUT, tmp_path / "takeout-20261119.zip")
    from_zip = [r for r in fitbit.read(zipped, ctx) if isinstance(r, ReadingRecord)]
    assert [r.row("fitbit", DEMO_NOW) for r in folder] == [
        r.row("fitbit", DEMO_NOW) for r in from_zip
    ]


def test_the_sleep_scores_restoration_is_the_recovery_input_and_the_switch_drops_it(
    store, ctx, tmp_path
):
    """Fitbit's restoration (sleeping heart rate below resting) is read as WHOOP's recovery
    is: dated at the wake-up, scored against its own baseline; a weights file that keeps
    vendor composites out leaves it out."""
    from datetime import UTC, date, datetime

    from bridge.cycle.meters import load_frames
    from mappings.meters import MeterRules, compute_slots, load_weights
    from mappings.slots import SlotKey

    import_file(store, "fitbit", TAKEOUT, ctx)
    lo, hi = datetime(2026, 11, 10, tzinfo=UTC), datetime(2026, 11, 19, tzinfo=UTC)
    readings, events = load_frames(store, lo, hi)
    slot = [SlotKey(date(2026, 11, 18), 1)]
    (res,) = compute_slots(readings, events, slot, tz=ctx.tz, now=hi)
    used = {i["name"]: i for i in res.meters["vitality"].provenance["inputs"]}
    assert used["recovery"]["value"] == 20  # the morning's restoration points
    # Two nights are no baseline: the population's 19 +/- 3.3 places 20 a little above.
    assert 0.5 < used["recovery"]["score"] < 0.8
    own = tmp_path / "weights.toml"
    own.write_text('version = "no-vendor.1"\n[vendor_scores]\nas_inputs = false\n')
    rules = MeterRules(weights=load_weights(own))
    (res,) = compute_slots(readings, events, slot, tz=ctx.tz, now=hi, rules=rules)
    assert "recovery" not in {i["name"] for i in res.meters["vitality"].provenance["inputs"]}


def test_importing_twice_adds_nothing(store, ctx, tmp_path):
    folder = _copy(tmp_path)
    first = import_file(store, "fitbit", folder, ctx)
    assert first.new == first.records == store.count(Reading) == 33
    assert sum(first.skipped.values()) == 3
    again = import_file(store, "fitbit", folder, ctx)
    assert again.skipped_same_file
    forced = import_file(store, "fitbit", folder, ctx, force=True)
    assert forced.new == 0 and store.count(Reading) == 33
    # The same export as a ZIP: its rows are already there.
    zipped = import_file(store, "fitbit", _zip(folder, tmp_path / "t.zip"), ctx)
    assert zipped.new == 0 and store.count(Reading) == 33


def test_a_changed_folder_is_imported_again(store, ctx, tmp_path):
    folder = _copy(tmp_path)
    import_file(store, "fitbit", folder, ctx)
    hrv = folder / FITBIT / "Heart Rate Variability"
    (hrv / "Daily Heart Rate Variability Summary - 2026-11-(19).csv").write_text(
        "timestamp,rmssd,nremhr,entropy\n2026-11-19T00:00:00,41.0,54.0,2.9\n"
    )
    second = import_file(store, "fitbit", folder, ctx)
    assert not second.skipped_same_file and second.new == 1


def test_a_rescored_night_replaces_the_earlier_one(store, ctx, tmp_path):
    folder = _copy(tmp_path)
    import_file(store, "fitbit", folder, ctx)
    logs = json.loads((folder / SLEEP).read_text())
    # Fitbit re-stages the night: the first light hour becomes deep, and the night is
    # re-scored; the person also trimmed its end by 20 minutes.
    logs[0]["levels"]["data"][1]["level"] = "deep"
    logs[0]["levels"]["data"] = logs[0]["levels"]["data"][:-1]
    logs[0]["endTime"] = "2026-11-18T06:20:00.000"
    logs[0]["timeInBed"] = 430
    (folder / SLEEP).write_text(json.dumps(logs))
    scores = folder / FITBIT / "Sleep Score/sleep_score.csv"
    scores.write_text(scores.read_text().replace(",82,", ",85,"))
    summary = import_file(store, "fitbit", folder, ctx)
    assert summary.replaced >= 3  # the old in-bed span, light hour and final wake
    with store.session() as session:
        rows = session.execute(
            select(Reading.label, Reading.start_utc, Reading.end_utc, Reading.value).where(
                Reading.source == "fitbit",
                Reading.revision == "sleep:2026-11-18",
                Reading.start_utc < Reading.end_utc,
            )
        ).all()
        scores_now = session.execute(
            select(Reading.value).where(Reading.metric == "sleep_score")
        ).all()
    in_bed = [r for r in rows if r.label == "in_bed" and r.value > 60]
    assert len(in_bed) == 1 and in_bed[0].value == 430
    assert sorted(v for (v,) in scores_now) == [74, 85]
    minutes = Counter()
    for label, start, end, _ in rows:
        if start.hour >= 20 or start.hour < 12:
            minutes[label] += (end - start).total_seconds() / 60
    assert minutes["deep"] == 140 and minutes["core"] == 178.5 and minutes["awake"] == 12.5


@pytest.mark.parametrize(
    "case",
    [
        (SLEEP, "[{not json", "sleep-2026-11-16.json is not valid JSON"),
        (SLEEP, '{"logId": 1}', "a list of entries was expected"),
        (
            FITBIT
            + "Heart Rate Variability/Daily Heart Rate Variability Summary - 2026-11-(18).csv",
            "timestamp,hrv\n2026-11-18T00:00:00,38\n",
            "no 'rmssd' column",
        ),
    ],
)
def test_a_broken_file_stops_the_import_and_stores_nothing(store, ctx, tmp_path, case):
    member, text, needle = case
    folder = _copy(tmp_path)
    (folder / member).write_text(text)
    with pytest.raises(InputError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        import_file(store, "fitbit", folder, ctx)
    assert store.count(Reading) == 0


def test_an_export_without_fitbit_files_is_refused(store, ctx, tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("hi")
    with pytest.raises(InputError, match="is this a Fitbit export"):
        import_file(store, "fitbit", tmp_path / "empty", ctx)
    with pytest.raises(InputError, match="not a zip file"):
        import_file(store, "fitbit", tmp_path / "empty" / "notes.txt", ctx)


def test_the_cli_imports_a_folder(tmp_path):
    cfg = write_config(tmp_path / "c.toml", tmp_path / "data")
    folder = _copy(tmp_path)
    result = CliRunner().invoke(app, ["--config", str(cfg), "import", "fitbit", str(folder)])
    assert result.exit_code == 0, result.output
    assert "33 records" in result.output and "3 skipped as unreadable" in result.output
    again = CliRunner().invoke(app, ["--config", str(cfg), "import", "fitbit", str(folder)])
    assert "already imported" in again.output


PMDATA = DATASETS / "pmdata"


@pytest.mark.skipif(not (PMDATA / "p01").is_dir(), reason=missing_reason(PMDATA))
def test_a_real_pmdata_person(store, tmp_path):
    # PMData's people lived in Norway; its files are Fitbit's own export format.
    oslo = ReadContext(tz=ZoneInfo("Europe/Oslo"), now=DEMO_NOW)
    started = time.perf_counter()
    summary = import_file(store, "fitbit", PMDATA / "p01", oslo)
    seconds = time.perf_counter() - started
    print(f"\nPMData p01 through import fitbit: {summary.records} records in {seconds:.2f} s")
    assert sum(summary.skipped.values()) == 0
    # PMData repeats the logs at its 30-day file boundaries: the same rows, stored once.
    assert summary.records > summary.new == store.count(Reading) > 9000
    logs = json.loads((PMDATA / "p01" / "fitbit" / "sleep.json").read_text())
    with store.session() as session:
        in_bed = session.execute(
            select(Reading.value).where(Reading.metric == "sleep", Reading.label == "in_bed")
        ).all()
        scores = session.execute(select(Reading.value).where(Reading.metric == "sleep_score")).all()
    # Every log with a start and an end is one in-bed span (a log PMData has twice, with
    # the same times, is one).
    spans = {(log["startTime"], log["endTime"]) for log in logs}
    assert len(in_bed) == len(spans)
    assert len(scores) > 140 and all(0 < v <= 100 for (v,) in scores)
    again = import_file(store, "fitbit", PMDATA / "p01", oslo, force=True)
    assert again.new == 0


def test_the_watched_export_dir_imports_a_takeout_zip_once(store, settings, ctx, tmp_path):
    from bridge.intake.sources import run_source

    watched = tmp_path / "fitbit"
    watched.mkdir()
    _zip(TAKEOUT, watched / "takeout-20261119T101010Z-001.zip")
    section = settings.sources.fitbit.model_copy(
        update={"enabled": True, "export_dir": str(watched)}
    )
    settings = settings.model_copy(
        update={"sources": settings.sources.model_copy(update={"fitbit": section})}
    )
    first = run_source(store, settings, "fitbit", ctx)
    assert first.status == "ok" and first.new == store.count(Reading) == 33
    again = run_source(store, settings, "fitbit", ctx)
    assert again.status == "ok" and again.records == 0
