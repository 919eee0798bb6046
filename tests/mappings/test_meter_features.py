"""Daily features and per-slot inputs, each against a hand-computed expectation."""

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pandas as pd
import pytest

from mappings.explain import explain_slot
from mappings.frames import EVENT_COLUMNS, READING_COLUMNS, Readings, empty_events
from mappings.meters import compute_slots
from mappings.sleep import nightly
from mappings.slots import SlotKey
from mappings.steps import resolve
from tests.conftest import BERLIN

TOKYO = ZoneInfo("Asia/Tokyo")
NEW_YORK = ZoneInfo("America/New_York")
HONOLULU = ZoneInfo("Pacific/Honolulu")


def row(metric, start, end, value=None, *, label="", origin="Watch", zone=None):
    """One reading; `zone` is where it was measured (its own UTC offset), default home."""
    off = None if zone is None else int(start.astimezone(zone).utcoffset().total_seconds() // 60)
    return (
        metric,
        pd.Timestamp(start).tz_convert("UTC"),
        pd.Timestamp(end).tz_convert("UTC"),
        value,
        label,
        origin,
        off,
    )


def frame(rows):
    return pd.DataFrame(rows, columns=READING_COLUMNS)


def local(y, m, d, h, mi=0, *, tz=BERLIN):
    return datetime(y, m, d, h, mi, tzinfo=tz)


def sleep_input(readings, key, now, tz=BERLIN):
    (res,) = compute_slots(readings, empty_events(), [key], tz=tz, now=now)
    vit = res.meters["vitality"].provenance.get("inputs", [])
    return next((i for i in vit if i["name"] == "sleep_duration"), None)


def epoch(d: date) -> int:
    return d.toordinal() - date(1970, 1, 1).toordinal()


def test_a_dst_night_is_measured_in_real_minutes_and_lands_on_the_wake_day():
    # 2026-10-25: Berlin clocks go back at 03:00. 23:00 CEST -> 07:00 CET is 9 real hours.
    fall = frame([row("sleep", local(2026, 10, 24, 23), local(2026, 10, 25, 7), label="asleep")])
    got = sleep_input(fall, SlotKey(date(2026, 10, 25), 0), local(2026, 10, 25, 11))
    assert got["value"] == pytest.approx(540.0)
    # 2026-03-29: clocks go forward at 02:00. 23:00 CET -> 07:00 CEST is 7 real hours.
    spring = frame([row("sleep", local(2026, 3, 28, 23), local(2026, 3, 29, 7), label="asleep")])
    got = sleep_input(spring, SlotKey(date(2026, 3, 29), 0), local(2026, 3, 29, 11))
    assert got["value"] == pytest.approx(420.0)
    assert sleep_input(spring, SlotKey(date(2026, 3, 28), 3), local(2026, 3, 29, 4, 59)) is None


def test_nights_abroad_land_on_the_day_the_person_woke_up_there():
    # Tokyo: 23:00 -> 07:00 local is 15:00 -> 23:00 in Berlin, the day before.
    tokyo = frame(
        [
            row(
                "sleep",
                local(2026, 11, 17, 23, tz=TOKYO),
                local(2026, 11, 18, 7, tz=TOKYO),
                label="asleep",
                zone=TOKYO,
            )
        ]
    )
    assert list(nightly(Readings(tokyo, BERLIN)).index) == [epoch(date(2026, 11, 18))]
    got = sleep_input(tokyo, SlotKey(date(2026, 11, 18), 0), local(2026, 11, 18, 9))
    assert got["value"] == pytest.approx(480.0)
    # Honolulu: 23:00 -> 07:00 local is 10:00 -> 18:00 in Berlin on the 18th.
    night = [
        row(
            "sleep",
            local(2026, 11, 17, 23, tz=HONOLULU),
            local(2026, 11, 18, 7, tz=HONOLULU),
            label="asleep",
            zone=HONOLULU,
        )
    ]
    assert list(nightly(Readings(frame(night), BERLIN)).index) == [epoch(date(2026, 11, 18))]
    got = sleep_input(frame(night), SlotKey(date(2026, 11, 18), 2), local(2026, 11, 18, 20))
    assert got["value"] == pytest.approx(480.0)
    # Read in Berlin time instead (no offset of its own), it would be an evening sleep
    # ending at 18:00: the next day's night.
    home = frame([(*night[0][:-1], None)])
    assert list(nightly(Readings(home, BERLIN)).index) == [epoch(date(2026, 11, 19))]


def test_a_night_in_new_york_is_seen_once_the_person_wakes():
    night = frame(
        [
            row(
                "sleep",
                local(2026, 11, 17, 23, tz=NEW_YORK),
                local(2026, 11, 18, 7, tz=NEW_YORK),
                label="asleep",
                zone=NEW_YORK,
            )
        ]
    )
    # 07:00 in New York is 13:00 in Berlin: not yet known in the (Berlin) morning slot.
    assert sleep_input(night, SlotKey(date(2026, 11, 18), 0), local(2026, 11, 18, 11, 59)) is None
    got = sleep_input(night, SlotKey(date(2026, 11, 18), 1), local(2026, 11, 18, 14))
    assert got["value"] == pytest.approx(480.0)


def test_a_nap_is_not_the_main_sleep():
    readings = frame(
        [
            row("sleep", local(2026, 11, 17, 23, 30), local(2026, 11, 18, 6, 30), label="asleep"),
            row("sleep", local(2026, 11, 18, 14), local(2026, 11, 18, 14, 40), label="asleep"),
        ]
    )
    table = nightly(Readings(readings, BERLIN))
    day = table.loc[epoch(date(2026, 11, 18))]
    assert day["asleep_min"] == pytest.approx(420.0) and day["nap_min"] == pytest.approx(40.0)
    got = sleep_input(readings, SlotKey(date(2026, 11, 18), 2), local(2026, 11, 18, 20))
    assert got["value"] == pytest.approx(420.0)


def test_two_sources_of_one_night_are_merged_and_stages_come_from_one_source():
    readings = frame(
        [
            # The watch: 23:00-07:00 staged (6 h core, 1 h deep, 1 h rem).
            row("sleep", local(2026, 11, 17, 23), local(2026, 11, 18, 5), label="core"),
            row("sleep", local(2026, 11, 18, 5), local(2026, 11, 18, 6), label="deep"),
            row("sleep", local(2026, 11, 18, 6), local(2026, 11, 18, 7), label="rem"),
            # A ring, overlapping: 23:30-07:30, unstaged, 30 min awake inside.
            row(
                "sleep",
                local(2026, 11, 17, 23, 30),
                local(2026, 11, 18, 3),
                label="asleep",
                origin="Ring",
            ),
            row(
                "sleep",
                local(2026, 11, 18, 3),
                local(2026, 11, 18, 3, 30),
                label="awake",
                origin="Ring",
            ),
            row(
                "sleep",
                local(2026, 11, 18, 3, 30),
                local(2026, 11, 18, 7, 30),
                label="asleep",
                origin="Ring",
            ),
            row(
                "sleep",
                local(2026, 11, 17, 22, 45),
                local(2026, 11, 18, 7, 30),
                label="in_bed",
                origin="Ring",
            ),
        ]
    )
    night = nightly(Readings(readings, BERLIN)).loc[epoch(date(2026, 11, 18))]
    assert night["asleep_min"] == pytest.approx(510.0)  # 23:00-07:30 once, not 480 + 450
    assert night["in_bed_min"] == pytest.approx(525.0)  # 22:45-07:30
    assert night["efficiency"] == pytest.approx(510 / 525)
    assert night["deep_share"] == pytest.approx(1 / 8) and night["rem_share"] == pytest.approx(
        1 / 8
    )
    assert night["stage_origin"] == "Watch"
    # Asleep 23:00-07:30 (in bed from 22:45): midpoint 03:15, 915 minutes after noon.
    assert night["midpoint_min"] == pytest.approx(915.0)


def test_steps_partly_counted_twice_are_resolved_by_interval_not_by_bucket():
    readings = frame(
        [
            row("steps", local(2026, 11, 18, 10), local(2026, 11, 18, 10, 30), 300.0),
            row(
                "steps",
                local(2026, 11, 18, 10, 15),
                local(2026, 11, 18, 10, 45),
                300.0,
                origin="iPhone",
            ),
            row(
                "steps",
                local(2026, 11, 18, 11),
                local(2026, 11, 18, 11, 10),
                100.0,
                origin="iPhone",
            ),
        ]
    )
    kept = resolve(Readings(readings, BERLIN), ("watch", "phone"))
    by_origin = kept.groupby("origin")["kept"].sum()
    # The phone's first record overlaps the watch for half its time: half its steps stay.
    assert by_origin["Watch"] == pytest.approx(300.0)
    assert by_origin["iPhone"] == pytest.approx(150.0 + 100.0)


def test_calendar_features_of_a_packed_afternoon():
    def ev(h0, h1, action="ADMIN_WORK", attendees=4, title="Sync", *, all_day=False):
        return (
            pd.Timestamp(local(2026, 11, 18, 0) + timedelta(hours=h0)).tz_convert("UTC"),
            pd.Timestamp(local(2026, 11, 18, 0) + timedelta(hours=h1)).tz_convert("UTC"),
            action,
            "confirmed",
            "opaque",
            all_day,
            attendees,
            title,
        )

    events = pd.DataFrame(
        [
            ev(12, 13),
            ev(13, 14),
            ev(14.1, 15),  # 3 h with two short gaps (< 15 min)
            ev(15.5, 16.5, "DEEP_WORK", 1, "Write report"),
            ev(9, 10, "SOCIALIZE", 3, "Coffee with Ana"),
            ev(-24 * 2, -24 * 1, "NOT_AN_ACTION", 0, "Tax return due", all_day=True),
            ev(24 * 2, 24 * 3, "NOT_AN_ACTION", 0, "Thesis submission", all_day=True),
        ],
        columns=EVENT_COLUMNS,
    )
    (res,) = compute_slots(
        frame([]), events, [SlotKey(date(2026, 11, 18), 1)], tz=BERLIN, now=local(2026, 11, 18, 17)
    )
    inputs = {
        i["name"]: i
        for m in ("cognition", "serenity", "progress", "connection")
        for i in res.meters[m].provenance["inputs"]
    }
    assert inputs["meeting_density"]["value"] == 3.0  # the coffee is not a meeting
    assert inputs["longest_stretch"]["value"] == pytest.approx(180.0)
    assert inputs["slot_density"]["value"] == pytest.approx((3 * 60 - 6 + 60) / 300, abs=1e-3)
    assert inputs["focus_today"]["value"] == pytest.approx(60 + 0.5 * (3 * 60 - 6))
    assert inputs["social_week"]["value"] == 1.0
    # The submission (all day on the 20th) is due at its end, midnight before the 21st:
    # 2 days 7 hours after 17:00 on the 18th. The tax return was due two days ago.
    assert inputs["deadline_runway"]["value"] == pytest.approx(2 + 7 / 24, abs=1e-3)
    assert inputs["deadline_runway"]["score"] == pytest.approx((2 + 7 / 24) / 7, abs=1e-3)


def test_a_meter_is_half_plus_its_effects_and_the_explanation_says_so():
    readings = frame(
        [
            row("sleep", local(2026, 11, 17, 23), local(2026, 11, 18, 4), label="asleep"),
            row("resting_hr", local(2026, 11, 18, 6), local(2026, 11, 18, 6), 70.0),
        ]
    )
    (res,) = compute_slots(
        readings,
        empty_events(),
        [SlotKey(date(2026, 11, 18), 0)],
        tz=BERLIN,
        now=local(2026, 11, 18, 9),
    )
    vit = res.meters["vitality"]
    assert vit.value == pytest.approx(
        0.5 + sum(i["effect"] for i in vit.provenance["inputs"]), abs=2e-4
    )
    # Cold start: 70 bpm vs the population's 62, with the cold-start confidence.
    rhr = next(i for i in vit.provenance["inputs"] if i["name"] == "resting_hr")
    assert (
        rhr["confidence"] == 0.4
        and rhr["score"] < 0.5
        and rhr["baseline"]["resting_hr:Watch_median"] == 62.0
    )
    doc = {
        "date": "2026-11-18",
        "slot_name": "morning",
        "timestep": 8,
        "mapping_version": res.mapping_version,
        **{m: v.value for m, v in res.meters.items()},
        "confidence": {m: v.confidence for m, v in res.meters.items()},
        "provenance": {m: v.provenance for m, v in res.meters.items()},
        "deltas": res.deltas,
    }
    text = "\n".join(explain_slot(doc))
    assert "- sleep_duration   5.0 h" in text and "resting_hr" in text and "(your usual 62)" in text
    assert "progress    —     no calendar events" in text


def test_daily_features_keep_hrv_methods_and_sources_apart():
    from mappings.daily import daily_features

    readings = frame(
        [
            row("sleep", local(2026, 11, 17, 23), local(2026, 11, 18, 7), label="asleep"),
            row("hrv_sdnn", local(2026, 11, 18, 3), local(2026, 11, 18, 3, 1), 48.0),
            row("hrv_sdnn", local(2026, 11, 18, 4), local(2026, 11, 18, 4, 1), 52.0),
            row("hrv_rmssd", local(2026, 11, 18, 6), local(2026, 11, 18, 6), 35.0, origin="WHOOP"),
            row("resting_hr", local(2026, 11, 18, 6), local(2026, 11, 18, 6), 55.0),
            row("steps", local(2026, 11, 18, 10), local(2026, 11, 18, 11), 1000.0),
            row("steps", local(2026, 11, 18, 10), local(2026, 11, 18, 11), 900.0, origin="iPhone"),
            row("mindful", local(2026, 11, 18, 12), local(2026, 11, 18, 12, 10), 10.0),
            row(
                "workout",
                local(2026, 11, 18, 18),
                local(2026, 11, 18, 18, 45),
                None,
                label="running",
            ),
        ]
    )
    day = daily_features(readings, tz=BERLIN).loc[date(2026, 11, 18)]
    assert day["sleep_asleep_min"] == 480.0
    assert day["hrv_sdnn:Watch"] == 50.0 and day["hrv_rmssd:WHOOP"] == 35.0
    assert day["resting_hr"] == 55.0 and day["steps"] == 1000.0
    assert day["mindful_min"] == 10.0 and day["workout_min"] == 45.0


def test_the_inputs_that_moved_a_meter_add_up_to_its_delta():
    from mappings.explain import moves
    from tests.mappings.test_meters import events, history

    keys = [SlotKey(date(2026, 11, 19), 0), SlotKey(date(2026, 11, 19), 1)]
    first, second = compute_slots(
        history(), events(6), keys, tz=BERLIN, now=local(2026, 11, 19, 16)
    )
    for meter in ("vitality", "cognition", "serenity"):
        moved = moves(second.meters[meter].provenance, first.meters[meter].provenance, most=99)
        assert moved, meter
        assert sum(d for _, d in moved) == pytest.approx(second.deltas[meter], abs=1e-3)
