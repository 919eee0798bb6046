"""Meters from the real public samples (Garmin Connect JSON, Whoop, Apple Health XML).

The Garmin and Whoop connectors are written elsewhere; these tests read the JSON fields
they need themselves, the way a connector would map them to readings.
"""

import json
import math
import statistics
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pandas as pd
import pytest

from connectors import apple_health
from connectors.base import ReadContext
from mappings.frames import READING_COLUMNS, empty_events
from mappings.meters import compute_slots
from mappings.slots import SlotKey
from tests.shared import shared_path

DENVER = ZoneInfo("America/Denver")  # the Garmin sample's owner: UTC-6 in July
FIXTURES = shared_path()
GARMIN = FIXTURES / "garmin" / "connect_api"


def _load(name):
    return json.loads((GARMIN / name).read_text())


def _ms(value):
    return datetime.fromtimestamp(value / 1000, UTC)


def _gmt(text):
    return datetime.fromisoformat(text.rstrip("Z")).replace(tzinfo=UTC)


def _row(metric, start, end, value, label="", *, origin="Garmin Forerunner", offset=-360):
    return (metric, pd.Timestamp(start), pd.Timestamp(end), value, label, origin, offset)


def _frame(rows):
    return pd.DataFrame(rows, columns=READING_COLUMNS)


def _apple(name, tz):
    """A readings frame from an Apple Health sample, read by the real importer."""
    ctx = ReadContext(tz=tz, now=datetime(2026, 1, 1, tzinfo=tz), past_days=100_000)
    path = FIXTURES / "apple_health" / name
    records = [r.row("apple_health", datetime.now(UTC)) for r in apple_health.read(path, ctx)]
    return pd.DataFrame(records)[READING_COLUMNS]


def _inputs(result, meter):
    return {i["name"]: i for i in result.meters[meter].provenance.get("inputs", [])}


def test_garmin_sleep_lands_on_the_wake_day_with_its_stages():
    dto = _load("wellness-service_dailySleepData_2021-07-20.json")["dailySleepDTO"]
    start = _ms(dto["sleepStartTimestampGMT"])
    # The sample has no sleepLevels, only totals: lay them out as consecutive stages.
    rows, t = [], start
    for label, key in (
        ("core", "lightSleepSeconds"),
        ("deep", "deepSleepSeconds"),
        ("rem", "remSleepSeconds"),
        ("awake", "awakeSleepSeconds"),
    ):
        end = t + timedelta(seconds=dto[key])
        rows.append(_row("sleep", t, end, None, label))
        t = end
    assert t == _ms(dto["sleepEndTimestampGMT"])
    now = datetime(2021, 7, 20, 9, tzinfo=DENVER)
    (res,) = compute_slots(
        _frame(rows), empty_events(), [SlotKey(date(2021, 7, 20), 0)], tz=DENVER, now=now
    )
    vit, cog = _inputs(res, "vitality"), _inputs(res, "cognition")
    assert vit["sleep_duration"]["value"] == pytest.approx(dto["sleepTimeSeconds"] / 60)  # 429
    staged = dto["deepSleepSeconds"] + dto["lightSleepSeconds"] + dto["remSleepSeconds"]
    assert cog["deep_sleep_share"]["value"] == pytest.approx(
        dto["deepSleepSeconds"] / staged, abs=1e-3
    )
    assert cog["sleep_efficiency"]["value"] == pytest.approx(25740 / 27540, abs=1e-3)
    # 429 min vs a 450-min target: score squash((429 - 390) / 45).
    assert vit["sleep_duration"]["score"] == pytest.approx(1 / (1 + math.exp(-39 / 45)), abs=1e-4)


def test_garmin_hrv_is_rmssd_compared_with_its_own_baseline():
    summaries = _load("hrv-service_hrv_daily_2023-07-01_2023-07-20.json")["hrvSummaries"]
    rows = []
    for s in summaries:
        # lastNightAvg is the night ending on calendarDate; stamp it at 06:00 local.
        at = datetime.fromisoformat(s["calendarDate"]).replace(hour=6, tzinfo=DENVER)
        rows.append(_row("hrv_rmssd", at, at, float(s["lastNightAvg"])))
    now = datetime(2023, 7, 20, 9, tzinfo=DENVER)
    (res,) = compute_slots(
        _frame(rows), empty_events(), [SlotKey(date(2023, 7, 20), 0)], tz=DENVER, now=now
    )
    hrv = _inputs(res, "vitality")["hrv"]
    # The latest 24 hours hold the 20th's value; the baseline is the days before the
    # window's first day (the 19th), so July 1-18: the median on the log scale.
    prior = [s["lastNightAvg"] for s in summaries[:-2]]
    assert hrv["value"] == summaries[-1]["lastNightAvg"] == 42
    median = math.exp(statistics.median(math.log(v) for v in prior))
    assert hrv["baseline"]["hrv_rmssd:Garmin Forerunner_median"] == pytest.approx(median, abs=1e-3)
    assert hrv["confidence"] == pytest.approx(min(1.0, len(prior) / 28), abs=1e-3)
    # Garmin itself calls the night BALANCED (within 39-52): not an extreme score either.
    assert summaries[-1]["status"] == "BALANCED" and 0.2 < hrv["score"] < 0.8
    assert _inputs(res, "serenity")["hrv"]["score"] == hrv["score"]


def test_garmin_stress_and_body_battery_move_within_the_day():
    doc = _load("wellness-service_dailyStress_2023-07-20.json")
    rows = [_row("stress", _ms(t), _ms(t), float(v)) for t, v in doc["stressValuesArray"]]
    rows += [
        _row("body_battery", _ms(t), _ms(t), float(v))
        for t, _, v, _ in doc["bodyBatteryValuesArray"]
    ]
    # The samples run 18:10-02:15 local (UTC-6), every hour or so.
    evening = compute_slots(
        _frame(rows),
        empty_events(),
        [SlotKey(date(2023, 7, 19), 2)],
        tz=DENVER,
        now=datetime(2023, 7, 19, 19, tzinfo=DENVER),
    )[0]
    night = compute_slots(
        _frame(rows),
        empty_events(),
        [SlotKey(date(2023, 7, 19), 3)],
        tz=DENVER,
        now=datetime(2023, 7, 20, 3, 30, tzinfo=DENVER),
    )[0]
    early, late = _inputs(evening, "serenity")["stress"], _inputs(night, "serenity")["stress"]
    # At 19:00 the 6-hour window holds 18:10-18:20: 12, 18, 15.
    assert early["value"] == pytest.approx(15.0)
    # At 03:30 it holds 22:15-01:15: 20, 15, 25, 30.
    assert late["value"] == pytest.approx(22.5)
    assert late["score"] < early["score"] and early["confidence"] == 0.4  # no history yet
    assert night.meters["serenity"].value < evening.meters["serenity"].value
    # Body Battery, 3-hour window: 45, 48, 52 at 19:00; 35, 25 at 03:30.
    assert _inputs(evening, "vitality")["body_battery"]["value"] == pytest.approx(145 / 3, abs=1e-3)
    assert _inputs(night, "vitality")["body_battery"]["value"] == pytest.approx(30.0)
    assert night.meters["vitality"].value < evening.meters["vitality"].value


def test_garmin_resting_heart_rate_with_no_history_uses_the_cold_start_anchor():
    doc = _load("wellness-service_dailyHeartRate_2026-01-07.json")
    start, end = _gmt(doc["startTimestampGMT"]), _gmt(doc["endTimestampGMT"])
    rows = [_row("resting_hr", start, end, float(doc["restingHeartRate"]), offset=-420)]
    # The minute samples are stored as heart_rate; the meters do not read them.
    rows += [
        _row("heart_rate", _ms(t), _ms(t), float(v), offset=-420)
        for t, v in doc["heartRateValues"]
        if v is not None
    ]
    now = datetime(2026, 1, 8, 9, tzinfo=DENVER)
    (res,) = compute_slots(
        _frame(rows), empty_events(), [SlotKey(date(2026, 1, 8), 0)], tz=DENVER, now=now
    )
    rhr = _inputs(res, "vitality")["resting_hr"]
    assert rhr["value"] == 52 and rhr["confidence"] == 0.4
    # 52 bpm vs the population's 62 (spread 0.10 in ln): score squash(ln(62/52) / 0.10).
    assert rhr["score"] == pytest.approx(1 / (1 + math.exp(-math.log(62 / 52) / 0.10)), abs=1e-4)


def test_whoop_recovery_hrv_and_resting_hr_give_a_cold_start_vitality():
    rec = json.loads((FIXTURES / "whoop" / "example_recovery_collection.json").read_text())
    score = rec["records"][0]["score"]
    at = _gmt(rec["records"][0]["created_at"])
    rows = [
        _row("recovery", at, at, score["recovery_score"], origin="WHOOP", offset=0),
        _row("hrv_rmssd", at, at, score["hrv_rmssd_milli"], origin="WHOOP", offset=0),
        _row("resting_hr", at, at, score["resting_heart_rate"], origin="WHOOP", offset=0),
    ]
    london = ZoneInfo("Europe/London")
    now = datetime(2022, 4, 24, 14, tzinfo=london)
    (res,) = compute_slots(
        _frame(rows), empty_events(), [SlotKey(date(2022, 4, 24), 1)], tz=london, now=now
    )

    def sq(z):
        return 1 / (1 + math.exp(-z))

    recovery = sq((44.0 - 55.0) / 20.0)
    hrv = sq((math.log(31.813562) - math.log(40.0)) / 0.40)
    rhr = sq(-(math.log(64.0) - math.log(62.0)) / 0.10)
    expected = (0.20 * hrv + 0.15 * rhr + 0.10 * recovery) / 0.45
    assert res.meters["vitality"].value == pytest.approx(expected, abs=2e-4)
    assert res.meters["vitality"].value < 0.5  # below-average recovery, HRV and RHR
    expected_serenity = (0.20 * hrv + 0.10 * recovery) / 0.30
    assert res.meters["serenity"].value == pytest.approx(expected_serenity, abs=2e-4)


def test_apple_health_steps_from_the_sample_export():
    london = ZoneInfo("Europe/London")
    frame = _apple("export6s3sample.xml", london)
    steps = frame[frame["metric"] == "steps"]
    assert len(steps) == 10 and set(steps["utc_offset_min"]) == {60}
    now = datetime(2014, 9, 13, 18, tzinfo=london)
    (res,) = compute_slots(
        frame, empty_events(), [SlotKey(date(2014, 9, 13), 1)], tz=london, now=now
    )
    got = _inputs(res, "vitality")["steps"]
    assert got["value"] == 2517.0  # the ten records, 10:27-11:33
    # Cold start: 8000 a day expected, 10 of 15 active hours gone by 17:00.
    expected = 1 / (1 + math.exp(-2.0 * (2517 / (8000 * 10 / 15) - 1.0)))
    assert got["score"] == pytest.approx(expected, abs=1e-4)
    assert res.meters["vitality"].value == pytest.approx(round(expected, 4), abs=1e-4)
    assert res.meters["vitality"].confidence == pytest.approx(0.12 * 0.4 * 10 / 15, abs=1e-3)


def test_apple_health_workout_counts_for_the_week():
    la = ZoneInfo("America/Los_Angeles")
    frame = _apple("dogsheep_export.xml", la)
    assert "workout" in set(frame["metric"])
    now = datetime(2016, 11, 16, 12, tzinfo=la)
    (res,) = compute_slots(frame, empty_events(), [SlotKey(date(2016, 11, 16), 0)], tz=la, now=now)
    got = _inputs(res, "vitality")["workouts"]
    # 07:25:41-07:30:52: 311 seconds of running in the past 7 days, vs 150 minutes a week.
    assert got["value"] == pytest.approx(311 / 60, abs=1e-3)
    assert got["score"] == pytest.approx(311 / 60 / 150, abs=1e-4)
