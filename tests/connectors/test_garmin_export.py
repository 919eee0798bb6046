import json
import zipfile
from collections import Counter
from datetime import timedelta

import pytest

from bridge.errors import InputError
from bridge.intake.ingest import import_file
from bridge.store.models import Reading
from connectors import garmin_export
from tests.shared import shared_path

ROOT = "DI_CONNECT/"
UDS = [
    {
        "calendarDate": "2026-11-17",
        "wellnessStartTimeGmt": "2026-11-16T23:00:00.0",
        "wellnessStartTimeLocal": "2026-11-17T00:00:00.0",
        "restingHeartRate": 52,
        "minHeartRate": 47,
        "totalSteps": 9120,
        "allDayStress": {
            "aggregatorList": [
                {"type": "TOTAL", "averageStressLevel": 31},
                {"type": "AWAKE", "averageStressLevel": 38},
                {"type": "ASLEEP", "averageStressLevel": 14},
            ]
        },
        "bodyBattery": {
            "bodyBatteryStatList": [
                {"bodyBatteryStatType": "HIGHEST", "statsValue": 88},
                {"bodyBatteryStatType": "LOWEST", "statsValue": 21},
            ]
        },
    },
    # a day the watch was off: no stress ("-1"), no resting HR
    {
        "calendarDate": "2026-11-18",
        "totalSteps": 0,
        "allDayStress": {"aggregatorList": [{"type": "TOTAL", "averageStressLevel": -1}]},
    },
]
SLEEP = [
    {
        "calendarDate": "2026-11-18",
        "sleepStartTimestampGMT": "2026-11-17T22:14:00.0",
        "sleepEndTimestampGMT": "2026-11-18T05:50:00.0",
        "deepSleepSeconds": 5400,
        "lightSleepSeconds": 15600,
        "remSleepSeconds": 4800,
        "awakeSleepSeconds": 1560,
        "unmeasurableSeconds": 0,
        "averageRespiration": 14.2,
        "sleepScores": {"overallScore": 81},
    },
    {"calendarDate": "2026-11-19", "retro": True},  # no night recorded
    {  # a night in New York: the "Local" twin gives the offset (GMT-5)
        "calendarDate": "2026-11-21",
        "sleepStartTimestampGMT": "2026-11-21T04:00:00.0",
        "sleepEndTimestampGMT": "2026-11-21T12:00:00.0",
        "sleepStartTimestampLocal": "2026-11-20T23:00:00.0",
        "deepSleepSeconds": 3600,
    },
]
HEALTH = [
    {
        "calendarDate": "2026-11-18",
        "metrics": [
            {"type": "HRV", "value": 48.0, "baselineLowerLimit": 41, "baselineUpperLimit": 55},
            {"type": "HR", "value": 51.0},
            {"type": "SKIN_TEMP_C", "value": -0.2},
            {"type": "RESPIRATION", "value": 14.0},
        ],
    }
]


def _export(tmp_path, files, name="garmin.zip"):
    path = tmp_path / name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for member, data in files.items():
            zf.writestr(ROOT + member, data)
    return path


def _full(tmp_path):
    return _export(
        tmp_path,
        {
            "DI-Connect-Aggregator/UDSFile_2026-11-10_2026-11-20.json": json.dumps(UDS),
            # Garmin writes some files with a UTF-8 BOM
            "DI-Connect-Wellness/2026-11-10_2026-11-20_140089360_sleepData.json": "\ufeff"
            + json.dumps(SLEEP),
            "DI-Connect-Wellness/140089360_healthStatusData.json": json.dumps(HEALTH).encode(
                "utf-8-sig"
            ),
            "DI-Connect-Fitness/140089360_0_summarizedActivities.json": "[]",
        },
    )


def test_daily_summaries_sleep_and_health_status(ctx, tmp_path):
    records = list(garmin_export.read(_full(tmp_path), ctx))
    counts = Counter(r.metric for r in records)
    assert counts == {
        "resting_hr": 2,  # daily summary + health status, told apart by origin
        "steps": 2,
        "stress": 3,
        "body_battery": 2,
        "sleep": 7,  # two in-bed spans, four stages and one (the New York night)
        "respiratory_rate": 2,
        "hrv_rmssd": 1,
    }
    day = next(r for r in records if r.metric == "steps" and r.value == 9120)
    assert day.start.isoformat() == "2026-11-17T00:00:00+01:00"
    assert day.end - day.start == timedelta(days=1)
    stress = {r.label: r.value for r in records if r.metric == "stress"}
    assert stress == {"": 31, "awake": 38, "asleep": 14}  # the -1 "no data" day is dropped
    nights = [r for r in records if r.metric == "sleep"]
    sleep = {r.label: r.value for r in nights[1:5]}
    assert sleep == {"deep": 90, "core": 260, "rem": 80, "awake": 26}  # light -> core
    # Laid back to back from sleep start: each stage spans its own minutes.
    assert {r.label: (r.end - r.start).total_seconds() / 60 for r in nights[1:5]} == sleep
    assert nights[0].label == "in_bed" and nights[0].value == 456
    assert nights[0].start.isoformat() == "2026-11-17T23:14:00+01:00"
    assert nights[5].start.isoformat() == "2026-11-20T23:00:00-05:00"
    hrv = next(r for r in records if r.metric == "hrv_rmssd")
    assert hrv.value == 48 and hrv.label == "night"


def test_missing_files_are_tolerated(ctx, tmp_path):
    path = _export(tmp_path, {"DI-Connect-Wellness/1_sleepData.json": json.dumps(SLEEP)})
    assert Counter(r.metric for r in garmin_export.read(path, ctx)) == {
        "sleep": 7,
        "respiratory_rate": 1,
    }


def test_import_then_reimport(store, ctx, tmp_path):
    path = _full(tmp_path)
    first = import_file(store, "garmin-export", path, ctx)
    assert first.new == first.records == store.count(Reading) == 19
    again = import_file(store, "garmin-export", path, ctx, force=True)
    assert again.new == 0 and store.count(Reading) == 19


@pytest.mark.parametrize(
    ("files", "needle"),
    [
        ({"readme.txt": "hi"}, "is this a Garmin"),
        ({"DI-Connect-Wellness/1_sleepData.json": "{not json"}, "not valid JSON"),
    ],
)
def test_bad_exports(store, ctx, tmp_path, files, needle):
    path = _export(tmp_path, files)
    with pytest.raises(InputError, match=needle) as err:
        import_file(store, "garmin-export", path, ctx)
    assert str(path) in str(err.value)
    assert store.count(Reading) == 0


def test_an_unreadable_day_is_skipped_with_a_warning_and_the_rest_kept(
    store, ctx, tmp_path, caplog
):
    # One bad night in years of data must not cost the person the whole export.
    good = {"calendarDate": "2026-11-01", "restingHeartRate": 55, "totalSteps": 8000}
    bad = {"sleepStartTimestampGMT": "yesterday", "sleepEndTimestampGMT": "x"}
    path = _export(
        tmp_path,
        {
            "DI-Connect-Wellness/1_sleepData.json": json.dumps([bad]),
            "DI-Connect-Aggregator/UDSFile_2026-11-01_2026-11-02.json": json.dumps([good]),
        },
    )
    summary = import_file(store, "garmin-export", path, ctx)
    assert summary.skipped == {"garmin day": 1}
    assert store.count(Reading) == summary.new == 2  # the good day's resting HR and steps
    assert any("unreadable entry" in r.message for r in caplog.records)


def test_fit_files_inside_the_export_are_read(ctx, tmp_path):

    monitor = shared_path("garmin", "fit", "MonitoringFile.fit").read_bytes()
    path = _export(tmp_path, {"DI-Connect-Monitor/1_WELLNESS_Monitoring.fit": monitor})
    records = list(garmin_export.read(path, ctx))
    assert Counter(r.metric for r in records) == {"steps": 79}
    assert sum(r.value for r in records) == 3173
    broken = _export(tmp_path, {"DI-Connect-Monitor/x.fit": monitor[:-2] + b"\0\0"}, "bad.zip")
    with pytest.raises(
        InputError, match=r"bad\.zip: DI_CONNECT/DI-Connect-Monitor/x\.fit: not a readable FIT"
    ):
        list(garmin_export.read(broken, ctx))


# A day whose summary says when the person woke (its SLEEP event: 22:14 GMT + 7 h 36 min
# = 05:50 GMT, 06:50 in Berlin) and what the Body Battery was then.
BB_DAY = {
    "calendarDate": "2026-11-18",
    "wellnessStartTimeGmt": "2026-11-17T23:00:00.0",
    "wellnessStartTimeLocal": "2026-11-18T00:00:00.0",
    "restingHeartRate": 50,
    "bodyBatteryAtWakeTime": 77,
    "bodyBattery": {
        "bodyBatteryStatList": [
            {"bodyBatteryStatType": "HIGHEST", "statsValue": 81},
            {"bodyBatteryStatType": "LOWEST", "statsValue": 19},
            {"bodyBatteryStatType": "MOSTRECENT", "statsValue": 23},
        ]
    },
    "bodyBatteryActivityEventList": [
        {
            "eventType": "SLEEP",
            "eventStartTimeGmt": "2026-11-17T22:14:00.0",
            "durationInMilliseconds": 27_360_000,
        }
    ],
}


def _bb_export(tmp_path, day=BB_DAY, name="bb.zip"):
    return _export(
        tmp_path,
        {"DI-Connect-Aggregator/UDSFile_2026-11-18_2026-11-19.json": json.dumps([day])},
        name,
    )


def _body_battery_rows(store):
    from sqlalchemy import select

    with store.session() as s:
        rows = s.execute(select(Reading).where(Reading.metric == "body_battery")).scalars()
        return sorted((r.label, r.value, r.start_utc, r.end_utc) for r in rows)


def test_an_exports_body_battery_at_wake_is_vitalitys_input(store, ctx, tmp_path):
    """The export stores the API connector's labels, so the meters read its Body Battery."""
    from datetime import UTC, date, datetime

    from bridge.cycle.meters import load_frames
    from mappings.meters import compute_slots
    from mappings.slots import SlotKey

    import_file(store, "garmin-export", _bb_export(tmp_path), ctx)
    woke = datetime(2026, 11, 18, 5, 50, tzinfo=UTC)
    assert [(label, value) for label, value, *_ in _body_battery_rows(store)] == [
        ("at_wake", 77),  # dated at the wake-up, like the API's
        ("highest", 81),
        ("lowest", 19),  # the most recent (no moment) is not stored
    ]
    assert _body_battery_rows(store)[0][2:] == (woke, woke)
    lo, hi = datetime(2026, 11, 10, tzinfo=UTC), datetime(2026, 11, 19, tzinfo=UTC)
    readings, events = load_frames(store, lo, hi)
    (res,) = compute_slots(readings, events, [SlotKey(date(2026, 11, 18), 1)], tz=ctx.tz, now=hi)
    vitality = res.meters["vitality"].provenance
    used = {i["name"]: i for i in vitality["inputs"]}
    assert used["body_battery"]["value"] == 77
    assert "body_battery" not in vitality.get("missing", [])


def test_rows_stored_under_the_old_labels_are_relabelled_and_a_reimport_adds_nothing(
    database_url, ctx, tmp_path
):
    """Migration i38_body_battery_labels: what an earlier import stored (the value at wake
    as "atwaketime" over the whole day, the most recent value) becomes the new rows, and
    importing the same export again leaves one row per fact."""
    from datetime import UTC, datetime

    from alembic import command
    from sqlalchemy import text

    from bridge.store import Store
    from bridge.store.db import _alembic_config

    store = Store(database_url)
    try:
        cfg = _alembic_config(store.engine)
        command.downgrade(cfg, "i42_event_place")
        day_start, day_end = "2026-11-17 23:00:00.000000", "2026-11-18 23:00:00.000000"
        with store.engine.begin() as conn:
            old = (("atwaketime", 77), ("highest", 81), ("lowest", 19), ("mostrecent", 23))
            for label, value in old:
                conn.execute(
                    text(
                        "INSERT INTO readings (person, source, metric, origin, start_utc, "
                        "end_utc, utc_offset_min, value, unit, label, device, revision, "
                        "imported_at) VALUES (:p, 'garmin_export', 'body_battery', "
                        "'Garmin daily summary', :a, :b, 60, :v, 'score', :l, '', '', :a)"
                    ),
                    {"p": store.person, "a": day_start, "b": day_end, "v": value, "l": label},
                )
        command.upgrade(cfg, "head")
        start = datetime(2026, 11, 17, 23, tzinfo=UTC)
        end = datetime(2026, 11, 18, 23, tzinfo=UTC)
        # Not yet re-imported: the value at wake, at the day's start (no wake-up known).
        assert _body_battery_rows(store) == [
            ("at_wake", 77, start, start),
            ("highest", 81, start, end),
            ("lowest", 19, start, end),
        ]
        for _ in range(2):
            import_file(store, "garmin-export", _bb_export(tmp_path), ctx, force=True)
            woke = datetime(2026, 11, 18, 5, 50, tzinfo=UTC)
            assert _body_battery_rows(store) == [
                ("at_wake", 77, woke, woke),
                ("highest", 81, start, end),
                ("lowest", 19, start, end),
            ]
    finally:
        store.dispose()
