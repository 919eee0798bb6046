import math
from datetime import date, datetime, timedelta

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mappings.actions import METERS
from mappings.frames import EVENT_COLUMNS, READING_COLUMNS, USED_METRICS
from mappings.meters import compute_slots, empty_events, empty_readings, load_weights
from mappings.slots import SlotKey
from tests.conftest import BERLIN

DAY = date(2026, 11, 19)
MORNING_NOW = datetime(2026, 11, 19, 9, 0, tzinfo=BERLIN)


def _at(day: date, hour: float) -> pd.Timestamp:
    return pd.Timestamp(
        datetime(day.year, day.month, day.day, tzinfo=BERLIN) + timedelta(hours=hour)
    ).tz_convert("UTC")


def history(
    days: int = 21, *, last_sleep_h: float = 7.5, last_hrv: float = 50.0, last_rhr: float = 56.0
) -> pd.DataFrame:
    rows = []
    for back in range(days, -1, -1):
        d = DAY - timedelta(days=back)
        today = back == 0
        sleep_h = last_sleep_h if today else 7.5 + (back % 3 - 1) * 0.3
        bed = _at(d, -1.0)
        rows.append(("sleep", bed, bed + pd.Timedelta(hours=sleep_h * 0.8), 0, "core", "Watch"))
        rows.append(
            (
                "sleep",
                bed + pd.Timedelta(hours=sleep_h * 0.8),
                bed + pd.Timedelta(hours=sleep_h),
                0,
                "deep",
                "Watch",
            )
        )
        hrv = last_hrv if today else 50.0 + (back % 5 - 2)
        rows.append(("hrv_sdnn", _at(d, 3), _at(d, 3.02), hrv, "", "Watch"))
        rhr = last_rhr if today else 56.0 + (back % 3 - 1)
        rows.append(("resting_hr", _at(d, 6.5), _at(d, 6.5), rhr, "", "Watch"))
        for hour in range(7, 22 if not today else 9):
            rows.append(("steps", _at(d, hour), _at(d, hour + 0.3), 600.0, "", "Watch"))
            rows.append(("steps", _at(d, hour), _at(d, hour + 0.3), 580.0, "", "iPhone"))
    return pd.DataFrame(
        rows, columns=["metric", "start_utc", "end_utc", "value", "label", "origin"]
    )


def events(meetings_today: int = 0, social_week: int = 2) -> pd.DataFrame:
    rows = []
    for back in range(1, 8):
        d = DAY - timedelta(days=back)
        rows.append((_at(d, 10), _at(d, 12), "DEEP_WORK", "confirmed", "opaque", False, 1))
    for i in range(social_week):
        d = DAY - timedelta(days=i + 1)
        rows.append((_at(d, 19), _at(d, 21), "SOCIALIZE", "confirmed", "opaque", False, 4))
    for i in range(meetings_today):
        rows.append(
            (
                _at(DAY, 12 + i * 0.5),
                _at(DAY, 12.5 + i * 0.5),
                "ADMIN_WORK",
                "confirmed",
                "opaque",
                False,
                5,
            )
        )
    return pd.DataFrame(
        rows,
        columns=[
            "start_utc",
            "end_utc",
            "action",
            "status",
            "transparency",
            "all_day",
            "attendee_count",
        ],
    )


def meters_of(readings, evs, slot=0, now=MORNING_NOW):
    (res,) = compute_slots(readings, evs, [SlotKey(DAY, slot)], tz=BERLIN, now=now)
    return res.meters


def test_no_evidence_means_null_with_a_reason():
    m = meters_of(empty_readings(), empty_events())
    for name in METERS:
        assert m[name].value is None and m[name].confidence is None
        assert m[name].provenance["reason"]


def test_a_bad_night_gives_a_low_morning_vitality():
    good = meters_of(history(), events())
    bad = meters_of(history(last_sleep_h=4.5, last_hrv=30.0, last_rhr=66.0), events())
    assert good["vitality"].value > 0.5 > bad["vitality"].value
    names = {i["name"] for i in bad["vitality"].provenance["inputs"]}
    assert {"sleep_duration", "hrv", "resting_hr"} <= names
    assert bad["vitality"].provenance["mapping_version"] == load_weights().version


def test_a_back_to_back_meeting_afternoon_lowers_cognition_and_serenity():
    now = datetime(2026, 11, 19, 16, 0, tzinfo=BERLIN)
    calm = meters_of(history(), events(0), slot=1, now=now)
    packed = meters_of(history(), events(9), slot=1, now=now)
    assert packed["cognition"].value < calm["cognition"].value
    assert packed["serenity"].value < calm["serenity"].value


def test_a_week_without_social_events_lowers_connection():
    assert (
        meters_of(history(), events(social_week=0))["connection"].value
        < meters_of(history(), events(social_week=3))["connection"].value
    )


def test_steps_from_watch_and_phone_are_not_double_counted():
    m = meters_of(history(), events())
    steps = next(i for i in m["vitality"].provenance["inputs"] if i["name"] == "steps")
    assert steps["value"] == 1200.0  # two hours (07:00, 08:00) at max(600, 580), not 2360
    assert steps["baseline"]["usual_per_day"] == 600.0 * 15


def test_sleep_crossing_midnight_belongs_to_the_wake_day():
    m = meters_of(history(last_sleep_h=8.0), events())
    sleep = next(i for i in m["vitality"].provenance["inputs"] if i["name"] == "sleep_duration")
    assert sleep["value"] == pytest.approx(480.0)


def test_deltas_between_consecutive_slots():
    now = datetime(2026, 11, 19, 13, 0, tzinfo=BERLIN)
    res = compute_slots(
        history(), events(4), [SlotKey(DAY, 0), SlotKey(DAY, 1)], tz=BERLIN, now=now
    )
    assert all(v is None for v in res[0].deltas.values())
    assert res[1].deltas["serenity"] == pytest.approx(
        res[1].meters["serenity"].value - res[0].meters["serenity"].value, abs=1e-4
    )


@settings(max_examples=40, deadline=None)
@given(
    sleep_h=st.floats(0.5, 12),
    hrv=st.floats(5, 200),
    rhr=st.floats(35, 110),
    meetings=st.integers(0, 12),
    social=st.integers(0, 7),
    seed=st.integers(0, 2**16),
)
def test_meters_stay_in_range_and_ignore_row_order_and_duplicates(
    *, sleep_h, hrv, rhr, meetings, social, seed
):
    readings = history(10, last_sleep_h=sleep_h, last_hrv=hrv, last_rhr=rhr)
    evs = events(meetings, social)
    base = meters_of(readings, evs)
    shuffled = pd.concat([readings, readings.head(7)]).sample(frac=1, random_state=seed)
    again = meters_of(shuffled, evs.sample(frac=1, random_state=seed))
    for name in METERS:
        v = base[name].value
        assert v is None or 0.0 <= v <= 1.0
        assert again[name].value == v


@settings(max_examples=30, deadline=None)
@given(short=st.floats(3, 7), extra=st.floats(0.1, 3))
def test_a_longer_night_never_lowers_vitality(short, extra):
    a = meters_of(history(last_sleep_h=short), events())["vitality"].value
    b = meters_of(history(last_sleep_h=short + extra), events())["vitality"].value
    assert b >= a


@settings(max_examples=20, deadline=None)
@given(n=st.integers(0, 10))
def test_more_meetings_never_raise_serenity(n):
    now = datetime(2026, 11, 19, 16, 0, tzinfo=BERLIN)
    a = meters_of(history(), events(n), slot=1, now=now)["serenity"].value
    b = meters_of(history(), events(n + 1), slot=1, now=now)["serenity"].value
    assert b <= a


# --- scenarios with hand-computed expectations -------------------------------------------


def _sq(z):
    return 1 / (1 + math.exp(-z))


def _ev(start, end, action="ADMIN_WORK", attendees=5, title="Sync"):
    return (start, end, action, "confirmed", "opaque", False, attendees, title)


def _events(rows):
    return pd.DataFrame(rows, columns=EVENT_COLUMNS)


def test_a_bad_night_by_hand():
    rows = [
        ("sleep", _at(DAY, -1.5), _at(DAY, 3.0), 0, "asleep", "Watch"),  # 4.5 h
        ("hrv_sdnn", _at(DAY, 2), _at(DAY, 2.02), 30.0, "", "Watch"),
        ("resting_hr", _at(DAY, 6.5), _at(DAY, 6.5), 66.0, "", "Watch"),
    ]
    readings = pd.DataFrame(
        rows, columns=["metric", "start_utc", "end_utc", "value", "label", "origin"]
    )
    vit = meters_of(readings, empty_events())["vitality"]
    # No history: population anchors (SDNN 45 ms, spread 0.35; RHR 62 bpm, spread 0.10).
    sleep = _sq((270 - 390) / 45)
    hrv = _sq(math.log(30 / 45) / 0.35)
    rhr = _sq(-math.log(66 / 62) / 0.10)
    expected = (0.30 * sleep + 0.20 * hrv + 0.15 * rhr) / 0.65
    assert vit.value == pytest.approx(expected, abs=2e-4)  # 0.184
    assert vit.value < 0.25
    assert vit.provenance["missing"] == ["body_battery", "recovery", "steps", "workouts"]


def test_a_back_to_back_meeting_afternoon_by_hand():
    last_week = [
        _ev(_at(DAY - timedelta(days=1), 10), _at(DAY - timedelta(days=1), 11), "DEEP_WORK", 1)
    ]
    packed = last_week + [
        _ev(_at(DAY, 13 + i / 2), _at(DAY, 13.5 + i / 2))
        for i in range(8)  # 13:00-17:00
    ]
    now = datetime(2026, 11, 19, 17, 0, tzinfo=BERLIN)
    busy = meters_of(empty_readings(), _events(packed), slot=1, now=now)
    calm = meters_of(empty_readings(), _events(last_week), slot=1, now=now)
    # Cognition: slot 80 % busy, nothing before noon, a 240-minute stretch without a break.
    assert busy["cognition"].value == pytest.approx(
        (0.15 * 0.2 + 0.15 * 1.0 + 0.20 * _sq((90 - 240) / 30)) / 0.5, abs=2e-4
    )
    assert calm["cognition"].value == pytest.approx((0.15 + 0.15 + 0.20 * _sq(3)) / 0.5, abs=2e-4)
    # Serenity: 8 meetings = twice the usual 4 (score 0), the morning free (score 1).
    assert busy["serenity"].value == pytest.approx(0.15 / 0.40, abs=1e-4)
    assert calm["serenity"].value == 1.0


def test_a_week_without_social_events_by_hand():
    work = [
        _ev(_at(DAY - timedelta(days=d), 10), _at(DAY - timedelta(days=d), 12), "DEEP_WORK", 1)
        for d in range(1, 8)
    ]
    social = [
        _ev(_at(DAY - timedelta(days=d), 19), _at(DAY - timedelta(days=d), 21), "FAMILY_TIME", 3)
        for d in (1, 3, 5)
    ]
    alone = meters_of(empty_readings(), _events(work))["connection"]
    seen = meters_of(empty_readings(), _events(work + social))["connection"]
    assert alone.value == 0.0  # 1 - exp(-0 / 3)
    assert seen.value == pytest.approx(1 - math.exp(-1), abs=1e-4)
    assert alone.provenance["inputs"][0]["value"] == 0.0


# --- properties over arbitrary inputs ---------------------------------------------------

METRICS = [*sorted(USED_METRICS), "heart_rate"]  # heart_rate: stored, never read
LABELS = ["", "asleep", "core", "deep", "rem", "awake", "in_bed"]
ACTIONS = [
    "DEEP_WORK",
    "ADMIN_WORK",
    "LEARN",
    "SOCIALIZE",
    "FAMILY_TIME",
    "NOT_AN_ACTION",
    "UNCLASSIFIED",
]

reading_rows = st.lists(
    st.tuples(
        st.sampled_from(METRICS),
        st.floats(-72, 30),  # hours from midnight of DAY
        st.floats(0, 12),  # duration in hours
        st.one_of(st.none(), st.just(float("nan")), st.floats(-50, 500)),
        st.sampled_from(LABELS),
        st.sampled_from(["Watch", "iPhone", "Ring", ""]),
        st.one_of(st.none(), st.sampled_from([-300, 0, 60, 540])),
    ),
    max_size=30,
)
event_rows = st.lists(
    st.tuples(
        st.floats(-200, 30),
        st.floats(0, 10),
        st.sampled_from(ACTIONS),
        st.booleans(),
        st.integers(0, 8),
        st.sampled_from(["Sync", "Deadline", "Dinner"]),
        st.sampled_from(["confirmed", "cancelled"]),
    ),
    max_size=15,
)


def _arbitrary(rrows, erows):
    readings = pd.DataFrame(
        [(m, _at(DAY, h), _at(DAY, h + d), v, lab, o, off) for m, h, d, v, lab, o, off in rrows],
        columns=READING_COLUMNS,
    )
    events = _events(
        [
            (_at(DAY, h), _at(DAY, h + d), a, status, "opaque", all_day, n, t)
            for h, d, a, all_day, n, t, status in erows
        ]
    )
    return (readings if len(readings) else empty_readings()), (
        events if len(events) else empty_events()
    )


@settings(max_examples=15, deadline=None)
@given(rrows=reading_rows, erows=event_rows, slot=st.integers(0, 3))
def test_any_input_gives_meters_in_range_or_null_with_a_reason(rrows, erows, slot):
    readings, events = _arbitrary(rrows, erows)
    now = datetime(2026, 11, 20, 4, 0, tzinfo=BERLIN)
    res = compute_slots(readings, events, [SlotKey(DAY, slot)], tz=BERLIN, now=now)[0]
    for name in METERS:
        m = res.meters[name]
        if m.value is None:
            assert m.confidence is None and m.provenance["reason"]
        else:
            assert 0.0 <= m.value <= 1.0 and 0.0 <= m.confidence <= 1.0
            effects = sum(i["effect"] for i in m.provenance["inputs"])
            assert m.value == pytest.approx(min(1.0, max(0.0, 0.5 + effects)), abs=1e-3)
            for item in m.provenance["inputs"]:
                assert 0.0 <= item["score"] <= 1.0 and 0.0 <= item["confidence"] <= 1.0


@settings(max_examples=10, deadline=None)
@given(rrows=reading_rows, erows=event_rows, seed=st.integers(0, 2**16))
def test_arbitrary_rows_in_any_order_or_repeated_give_the_same_meters(rrows, erows, seed):
    readings, events = _arbitrary(rrows, erows)
    base = compute_slots(
        readings, events, [SlotKey(DAY, 0), SlotKey(DAY, 1)], tz=BERLIN, now=MORNING_NOW
    )
    again = compute_slots(
        pd.concat([readings, readings.head(3)]).sample(frac=1, random_state=seed),
        pd.concat([events, events.tail(2)]).sample(frac=1, random_state=seed),
        [SlotKey(DAY, 1), SlotKey(DAY, 0)],
        tz=BERLIN,
        now=MORNING_NOW,
    )
    for a, b in zip(base, again, strict=True):
        assert a.key == b.key
        assert {m: (v.value, v.confidence) for m, v in a.meters.items()} == {
            m: (v.value, v.confidence) for m, v in b.meters.items()
        }


@settings(max_examples=12, deadline=None)
@given(
    bed=st.floats(-4, 1),
    hours=st.floats(2, 9),
    extra=st.floats(0.1, 3),
    stages=st.booleans(),
    hrv=st.floats(10, 120),
)
def test_a_better_night_never_lowers_vitality_whatever_else_is_known(
    bed, hours, extra, stages, hrv
):
    def night(length):
        start = _at(DAY, bed)
        mid = start + pd.Timedelta(hours=length * 0.8)
        end = start + pd.Timedelta(hours=length)
        rows = [
            ("sleep", start, mid, None, "core" if stages else "asleep", "Watch", None),
            ("sleep", mid, end, None, "deep" if stages else "asleep", "Watch", None),
            ("hrv_sdnn", _at(DAY, bed + 1), _at(DAY, bed + 1.01), hrv, "", "Watch", None),
        ]
        return pd.DataFrame(rows, columns=READING_COLUMNS)

    now = datetime(2026, 11, 19, 16, 0, tzinfo=BERLIN)  # both nights are over by then
    short = meters_of(night(hours), events(), slot=1, now=now)["vitality"].value
    longer = meters_of(night(hours + extra), events(), slot=1, now=now)["vitality"].value
    assert longer >= short
