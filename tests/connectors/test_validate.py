from datetime import UTC, datetime, timedelta

import pytest

from bridge.intake.ingest import import_file
from bridge.store.models import Reading
from connectors.base import EventRecord, ReadingRecord
from connectors.validate import check_event, check_reading

NOW = datetime(2026, 11, 19, 8, 0, tzinfo=UTC)
T = datetime(2026, 11, 18, 22, 0, tzinfo=UTC)


def reading(metric="hrv_sdnn", value=45.0, start=T, minutes=1):
    return ReadingRecord(metric, start, start + timedelta(minutes=minutes), value)


@pytest.mark.parametrize(
    ("rec", "needle"),
    [
        (reading(value=-5), "hrv_sdnn value -5 outside 1..500"),
        (reading("steps", 1e12), "steps value 1e+12 outside"),
        (reading("heart_rate", float("nan")), "not a number"),
        (reading(start=datetime(1900, 1, 1, tzinfo=UTC)), "starts in 1900"),
        (reading(start=datetime(2200, 1, 1, tzinfo=UTC)), "in the future"),
        (reading(minutes=-10), "before it starts"),
        (reading("sleep", 600, minutes=60 * 24 * 5), "longer than"),
        (
            ReadingRecord("steps", datetime(2026, 11, 18), datetime(2026, 11, 18, 1), 10),
            "UTC offset",
        ),
    ],
)
def test_implausible_readings_say_why(rec, needle):
    assert needle in check_reading(rec, NOW)


@pytest.mark.parametrize(
    "rec",
    [
        reading(),
        reading("steps", 0),
        reading("stress", 100),
        reading("sleep", 480, minutes=480),
        reading("workout", None),
    ],
)
def test_plausible_readings_pass(rec):
    assert check_reading(rec, NOW) is None


def test_events_may_be_far_ahead_but_not_backwards():
    ahead = EventRecord("c", "u", "Trip", T + timedelta(days=400), T + timedelta(days=401))
    assert check_event(ahead, NOW) is None
    backwards = EventRecord("c", "u", "Oops", T, T - timedelta(hours=1))
    assert "before it starts" in check_event(backwards, NOW)


def test_an_import_skips_implausible_records_and_keeps_the_rest(store, ctx, tmp_path, caplog):
    rec = (
        '<Record type="HKQuantityTypeIdentifier{t}" sourceName="W" unit="{u}" '
        'startDate="{d} 08:00:00 +0100" endDate="{d} 08:01:00 +0100" value="{v}"/>\n'
    )
    body = (
        '<?xml version="1.0"?>\n<HealthData locale="en_US">\n'
        + rec.format(t="HeartRateVariabilitySDNN", u="ms", d="2026-11-01", v="-5")
        + rec.format(t="StepCount", u="count", d="2026-11-01", v="1000000000000")
        + rec.format(t="StepCount", u="count", d="1900-01-01", v="10")
        + rec.format(t="StepCount", u="count", d="2200-01-01", v="10")
        + rec.format(t="StepCount", u="count", d="2026-11-01", v="120")
        + "</HealthData>\n"
    )
    path = tmp_path / "export.xml"
    path.write_text(body)
    summary = import_file(store, "apple-health", path, ctx)
    assert store.count(Reading) == summary.new == 1
    assert summary.skipped == {"hrv_sdnn": 1, "steps": 3}
    assert "4 skipped as unreadable or implausible (hrv_sdnn 1, steps 3)" in summary.line()
    assert sum("skipping implausible" in r.message for r in caplog.records) == 2


def test_text_limits_match_the_columns_and_long_text_is_clipped():
    from bridge.store.models import CalendarEvent, Reading
    from connectors.validate import EVENT_TEXT, READING_TEXT

    for model, limits in ((Reading, READING_TEXT), (CalendarEvent, EVENT_TEXT)):
        for name, limit in limits.items():
            assert model.__table__.c[name].type.length == limit, (model.__name__, name)
    rec = ReadingRecord("steps", T, T + timedelta(minutes=1), 5.0, origin="W" * 10_000)
    assert check_reading(rec, NOW) is None and rec.origin == "W" * 200
