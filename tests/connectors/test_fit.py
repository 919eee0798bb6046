from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from garmin_fit_sdk import Encoder, Profile

from bridge.errors import InputError
from bridge.intake.ingest import import_file
from bridge.store.models import Reading
from connectors import fit
from tests.shared import shared_path

FIT = shared_path("garmin", "fit")
MESG = Profile["mesg_num"]
T0 = datetime(2026, 11, 18, 22, 0, tzinfo=UTC)


def _write(path, messages):
    encoder = Encoder()
    encoder.write_mesg(
        {
            "mesg_num": MESG["FILE_ID"],
            "type": "monitoring_b",
            "manufacturer": "garmin",
            "product": 3943,
            "time_created": T0,
        }
    )
    for name, fields in messages:
        encoder.write_mesg({"mesg_num": MESG[name], **fields})
    path.write_bytes(encoder.close())
    return path


def test_monitoring_file_steps_match_the_devices_daily_totals(ctx):
    records = list(fit.read(FIT / "MonitoringFile.fit", ctx))
    assert {r.metric for r in records} == {"steps"}
    # The file's own daily summary says 3142 walking + 31 running steps; the intervals
    # rebuilt from cumulative cycles and timestamp_16 must add up to exactly that.
    assert sum(r.value for r in records) == 3173
    assert all(r.end > r.start for r in records)
    first = min(r.start for r in records)
    assert first.utcoffset() == timedelta(hours=-6)  # from monitoring_info.local_timestamp
    assert first.date().isoformat() == "2014-12-27"
    assert records[0].origin == "garmin vivo_fit"


def test_activity_hrv_messages_become_rmssd(ctx):
    records = list(fit.read(FIT / "garmin-fenix-5-run.fit", ctx))
    (hrv,) = [r for r in records if r.metric == "hrv_rmssd"]
    assert hrv.label == "rr" and hrv.unit == "ms"
    assert 5 < hrv.value < 150  # artifacts (missed beats) filtered out
    assert hrv.start.utcoffset() == timedelta(hours=-7)


def test_a_run_keeps_its_heart_rate_samples_and_the_workout(ctx):
    # A 57-second run on a Fenix 5: 21 `record` messages with heart rate, one `session`.
    records = list(fit.read(FIT / "garmin-fenix-5-run.fit", ctx))
    counts = Counter(r.metric for r in records)
    assert counts == {
        "heart_rate": 21,
        "hrv_rmssd": 1,
        "workout": 1,
        "workout_energy": 1,
        "workout_distance": 1,
    }
    beats = [r.value for r in records if r.metric == "heart_rate"]
    assert min(beats) >= 40 and max(beats) == 112  # the session says max_heart_rate 112
    (run,) = [r for r in records if r.metric == "workout"]
    assert run.label == "running" and run.unit == "min"
    assert run.value == pytest.approx(56.887 / 60)
    assert run.start == datetime(2017, 6, 11, 14, 34, 9, tzinfo=UTC)
    assert (run.end - run.start).total_seconds() == pytest.approx(56.887)
    (km,) = [r for r in records if r.metric == "workout_distance"]
    (kcal,) = [r for r in records if r.metric == "workout_energy"]
    assert km.value == pytest.approx(0.15756, abs=1e-4) and kcal.value == 5


def test_importing_a_run_counts_every_record_it_stores(store, ctx):
    summary = import_file(store, "fit", FIT / "garmin-fenix-5-run.fit", ctx)
    assert summary.records == summary.new == 25
    from sqlmodel import select

    with store.session() as session:
        stored = session.exec(select(Reading).where(Reading.source == "fit")).all()
    assert len(stored) == 25


def test_sleep_levels_stress_hrv_status_and_respiration(ctx, tmp_path):
    levels = ["light", "deep", "rem", "awake", "unmeasurable"]
    path = _write(
        tmp_path / "sleep.fit",
        [
            ("SLEEP_LEVEL", {"timestamp": T0 + timedelta(minutes=30 * i), "sleep_level": lvl})
            for i, lvl in enumerate(levels)
        ]
        + [
            ("STRESS_LEVEL", {"stress_level_value": 35, "stress_level_time": T0}),
            (
                "STRESS_LEVEL",
                {"stress_level_value": -1, "stress_level_time": T0 + timedelta(minutes=3)},
            ),
            (
                "HRV_STATUS_SUMMARY",
                {
                    "timestamp": T0 + timedelta(hours=8),
                    "last_night_average": 42.5,
                    "status": "balanced",
                },
            ),
            ("HRV_VALUE", {"timestamp": T0 + timedelta(hours=1), "value": 38.0}),
            ("RESPIRATION_RATE", {"timestamp": T0 + timedelta(hours=1), "respiration_rate": 14.5}),
            ("RESPIRATION_RATE", {"timestamp": T0 + timedelta(hours=2), "respiration_rate": -2.0}),
        ],
    )
    records = list(fit.read(path, ctx))
    assert Counter(r.metric for r in records) == {
        "sleep": 4,
        "stress": 1,
        "hrv_rmssd": 2,
        "respiratory_rate": 1,
    }
    sleep = {r.label: r.value for r in records if r.metric == "sleep"}
    assert sleep == {"core": 30, "deep": 30, "rem": 30, "awake": 30}  # unmeasurable dropped
    night = next(r for r in records if r.metric == "hrv_rmssd" and r.label == "night")
    assert night.value == pytest.approx(42.5)
    assert next(r for r in records if r.metric == "stress").value == 35


def test_bad_crc_is_refused_and_nothing_is_written(store, ctx, tmp_path):
    data = bytearray((FIT / "MonitoringFile.fit").read_bytes())
    data[200] ^= 0xFF  # one flipped byte in the data section
    path = tmp_path / "bad.fit"
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"bad\.fit: not a readable FIT file"):
        import_file(store, "fit", path, ctx)
    assert store.count(Reading) == 0


@pytest.mark.parametrize(
    "content", [b"", b"\x00" * 3, b"<html>nope</html>" * 10, bytes(range(256)) * 8]
)
def test_not_a_fit_file(ctx, tmp_path, content):
    path = tmp_path / "x.fit"
    path.write_bytes(content)
    with pytest.raises(InputError) as err:
        list(fit.read(path, ctx))
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_import_twice_adds_nothing(store, ctx):
    first = import_file(store, "fit", FIT / "MonitoringFile.fit", ctx)
    again = import_file(store, "fit", FIT / "MonitoringFile.fit", ctx, force=True)
    assert first.new == first.records == store.count(Reading) > 0
    assert again.new == 0 and store.count(Reading) == first.records
