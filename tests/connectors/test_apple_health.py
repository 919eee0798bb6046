import io
import zipfile
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bridge.errors import InputError
from connectors import apple_health
from tests.conftest import SAMPLE
from tests.shared import shared_path

APPLE = shared_path("apple_health")


def _read(path: Path, ctx) -> list:
    return list(apple_health.read(path, ctx))


def test_real_export_with_full_dtd(ctx):
    records = _read(APPLE / "export6s3sample.xml", ctx)
    counts = Counter(r.metric for r in records)
    assert counts == {"steps": 10, "workout": 1, "workout_energy": 1, "workout_distance": 1}
    energy = next(r for r in records if r.metric == "workout_energy")
    assert (
        energy.value == pytest.approx(139.317) and energy.label == "Other"
    )  # pre-iOS 16 attribute
    first = next(r for r in records if r.metric == "steps")
    assert first.origin and first.unit == "count"
    assert first.start.utcoffset() is not None


def test_real_export_with_escaped_device_attribute(ctx):
    records = _read(APPLE / "dogsheep_export.xml", ctx)
    hr = next(r for r in records if r.metric == "heart_rate")
    assert hr.device == "Apple Watch"  # parsed out of "<<HKDevice: ...>, name:Apple Watch, ...>"


def test_real_zip_layout(ctx, tmp_path):
    archive = tmp_path / "export.zip"
    src = APPLE / "dogsheep_zip_contents"
    with zipfile.ZipFile(archive, "w") as zf:
        for f in src.rglob("*"):
            if f.is_file():
                zf.write(f, f.relative_to(src))
    assert Counter(r.metric for r in _read(archive, ctx))["workout"] >= 1


def test_bundled_sample_counts(ctx):
    counts = Counter(r.metric for r in _read(SAMPLE / "apple_health_export.zip", ctx))
    assert set(counts) == {
        "heart_rate",
        "steps",
        "sleep",
        "hrv_sdnn",
        "resting_hr",
        "workout",
        "workout_energy",
        "mindful",
    }
    assert counts["resting_hr"] == 33  # one a day, 2026-10-18 to the demo morning 2026-11-19


HEADER = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE HealthData [
<!-- HealthKit Export Version: 12 -->
<!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout)*)>
<!ATTLIST VisionPrescription
  type CDATA #REQUIRED
  dateIssued CDATA #REQUIRED
]>
<HealthData locale="en_US">
"""


def _rec(kind, value, start, end, source="Watch", *, unit="count"):
    return (
        f'<Record type="HKQuantityTypeIdentifier{kind}" sourceName="{source}" unit="{unit}" '
        f'startDate="{start}" endDate="{end}" value="{value}"/>\n'
    )


def test_ios16_broken_dtd_control_chars_correlations_and_new_types(ctx, tmp_path):
    body = (
        HEADER
        + _rec("StepCount", 100, "2026-11-01 08:00:00 +0100", "2026-11-01 08:10:00 +0100")
        # a stray vertical tab, as iOS 16 exports carry
        + '<Record type="HKQuantityTypeIdentifierHeartRate" sourceName="W\x0batch" unit="count/min" '
        'startDate="2026-11-01 08:00:00 +0100" endDate="2026-11-01 08:00:00 +0100" value="61"/>\n'
        + '<Correlation type="HKCorrelationTypeIdentifierBloodPressure" sourceName="Cuff" '
        'startDate="2026-11-01 08:00:00 +0100" endDate="2026-11-01 08:00:00 +0100">\n'
        + _rec("HeartRate", 70, "2026-11-01 08:00:00 +0100", "2026-11-01 08:00:00 +0100", "Cuff")
        + "</Correlation>\n"
        + '<Record type="HKQuantityTypeIdentifierHeartRateVariabilitySDNN" sourceName="Watch" unit="ms" '
        'startDate="2026-11-01 03:00:00 +0100" endDate="2026-11-01 03:01:00 +0100" value="41.5">\n'
        " <HeartRateVariabilityMetadataList>\n"
        '  <InstantaneousBeatsPerMinute bpm="58" time="3:00:01.23 AM"/>\n'
        " </HeartRateVariabilityMetadataList>\n</Record>\n"
        + '<Record type="HKCategoryTypeIdentifierSleepAnalysis" sourceName="Watch" '
        'startDate="2026-11-01 01:00:00 +0100" endDate="2026-11-01 01:30:00 +0100" '
        'value="HKCategoryValueSleepAnalysisAsleepDeep"/>\n'
        + '<Record type="HKCategoryTypeIdentifierSleepAnalysis" sourceName="Watch" '
        'startDate="2026-11-01 01:30:00 +0100" endDate="2026-11-01 02:00:00 +0100" '
        'value="HKCategoryValueSleepAnalysisAsleep"/>\n'
        + '<Workout workoutActivityType="HKWorkoutActivityTypeRunning" sourceName="Watch" '
        'startDate="2026-11-01 18:00:00 +0100" endDate="2026-11-01 18:30:00 +0100">\n'
        ' <WorkoutStatistics type="HKQuantityTypeIdentifierActiveEnergyBurned" sum="1255" unit="kJ"/>\n'
        "</Workout>\n" + "</HealthData>\n"
    )
    path = tmp_path / "export.xml"
    path.write_bytes(body.encode())
    records = _read(path, ctx)
    counts = Counter(r.metric for r in records)
    assert counts == {
        "steps": 1,
        "heart_rate": 1,
        "hrv_sdnn": 1,  # one beat is too few for an RMSSD
        "sleep": 2,
        "workout": 1,
        "workout_energy": 1,
    }
    energy = next(r for r in records if r.metric == "workout_energy")
    assert energy.value == pytest.approx(1255 / 4.184, abs=0.01) and energy.label == "Running"
    hr = next(r for r in records if r.metric == "heart_rate")
    assert hr.origin == "Watch" and hr.value == 61  # the Correlation child was not counted
    labels = sorted(r.label for r in records if r.metric == "sleep")
    assert labels == ["asleep", "deep"]
    step = next(r for r in records if r.metric == "steps")
    assert step.start == datetime(2026, 11, 1, 7, 0, tzinfo=UTC)
    assert step.start.utcoffset() == timedelta(hours=1)


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("export.zip", b"this is not a zip", "not a zip file"),
        (
            "export.xml",
            HEADER.encode()
            + _rec(
                "StepCount", 1, "2026-11-01 08:00:00 +0100", "2026-11-01 08:10:00 +0100"
            ).encode()[:40],
            "export ends early",
        ),
        ("export.xml", b"", "no <HealthData> element"),
        ("export.xml", b"<html><body>login</body></html>", "no <HealthData> element"),
    ],
)
def test_bad_files_get_one_clear_line(ctx, tmp_path, name, content, needle):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError) as err:
        _read(path, ctx)
    assert needle in str(err.value) and str(path) in str(err.value)
    assert "\n" not in str(err.value)


def test_zip_without_export_xml(ctx, tmp_path):
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("apple_health_export/other.txt", "hi")
    with pytest.raises(InputError, match=r"no export\.xml inside"):
        _read(path, ctx)


def test_entity_expansion_is_never_performed(ctx, tmp_path):
    bomb = (
        '<?xml version="1.0"?>\n<!DOCTYPE HealthData [\n<!ENTITY a "aaaaaaaaaa">\n'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">\n<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">\n'
        ']>\n<HealthData locale="en">'
        '<Record type="HKQuantityTypeIdentifierStepCount" sourceName="&c;" unit="count" '
        'startDate="2026-11-01 08:00:00 +0100" endDate="2026-11-01 08:10:00 +0100" value="5"/>'
        "</HealthData>"
    )
    path = tmp_path / "bomb.xml"
    path.write_text(bomb)
    # The DTD is dropped before parsing, so &c; is an undefined entity, not 1000 a's.
    with pytest.raises(InputError, match=r"malformed XML.*undefined entity"):
        _read(path, ctx)


def test_truncated_zip_member(ctx, tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(SAMPLE / "apple_health_export.zip", "x")  # any payload
        zf.writestr("apple_health_export/export.xml", (HEADER + "<Record " * 1000).encode())
    path = tmp_path / "export.zip"
    path.write_bytes(buf.getvalue())
    with pytest.raises(InputError):
        _read(path, ctx)


def _workout(children, **attrs):
    extra = "".join(f' {k}="{v}"' for k, v in attrs.items())
    return (
        '<Workout workoutActivityType="HKWorkoutActivityTypeSwimBikeRun" sourceName="Watch" '
        f'startDate="2026-11-01 08:00:00 +0100" endDate="2026-11-01 10:00:00 +0100"{extra}>\n'
        + children
        + "</Workout>\n"
    )


def _stat(kind, total, unit):
    return f'<WorkoutStatistics type="HKQuantityTypeIdentifier{kind}" startDate="2026-11-01 08:00:00 +0100" endDate="2026-11-01 10:00:00 +0100" sum="{total}" unit="{unit}"/>\n'


def test_workout_statistics_are_counted_once(ctx, tmp_path):
    legs = (
        '<WorkoutActivity uuid="a" startDate="2026-11-01 08:00:00 +0100" endDate="2026-11-01 09:00:00 +0100">'
        + _stat("ActiveEnergyBurned", 400, "kcal")
        + _stat("DistanceCycling", 30, "km")
        + "</WorkoutActivity>\n"
        '<WorkoutActivity uuid="b" startDate="2026-11-01 09:00:00 +0100" endDate="2026-11-01 10:00:00 +0100">'
        + _stat("ActiveEnergyBurned", 500, "kcal")
        + _stat("DistanceWalkingRunning", 6.2137, "mi")
        + "</WorkoutActivity>\n"
    )
    body = HEADER + _workout(
        _stat("ActiveEnergyBurned", 950, "kcal") + legs,
        totalEnergyBurned="1",  # the old attribute loses to WorkoutStatistics
    )
    body += _workout(legs)  # no totals of its own: the legs' sum
    path = tmp_path / "export.xml"
    path.write_text(body + "</HealthData>\n")
    records = _read(path, ctx)
    energy = [r.value for r in records if r.metric == "workout_energy"]
    distance = [r.value for r in records if r.metric == "workout_distance"]
    assert energy == [950, 900]
    assert distance == [pytest.approx(40.0, abs=0.01)] * 2  # 30 km + 6.2137 mi
    workout = next(r for r in records if r.metric == "workout")
    assert workout.value == 120 and workout.label == "SwimBikeRun"


@pytest.mark.parametrize(
    "fmt",
    [
        lambda h, m, s, cs: f"{h % 12 or 12}:{m:02d}:{s:02d}.{cs:02d} {'AM' if h < 12 else 'PM'}",
        lambda h, m, s, cs: f"{h:02d}:{m:02d}:{s:02d},{cs:02d}",
        lambda h, m, s, cs: f"{'午前' if h < 12 else '午後'}{h % 12}:{m:02d}:{s:02d}.{cs:02d}",
    ],
    ids=["en_US", "de_DE", "ja_JP"],
)
def test_hrv_beat_times_in_any_locale_give_the_same_rmssd(ctx, tmp_path, fmt):
    # Beats 1.00 s and 1.04 s apart in turn around midnight: every successive difference
    # is 40 ms, so RMSSD is exactly 40 ms whatever the time format.
    t, beats = 23 * 3600 + 59 * 60 + 50.0, []
    for i in range(30):
        cs = round(t * 100) % 8_640_000
        sec, cs = divmod(cs, 100)
        beats.append(
            f'<InstantaneousBeatsPerMinute bpm="59" time="{fmt(sec // 3600, sec // 60 % 60, sec % 60, cs)}"/>'
        )
        t += 1.0 if i % 2 else 1.04
    body = (
        HEADER
        + '<Record type="HKQuantityTypeIdentifierHeartRateVariabilitySDNN" sourceName="Watch" unit="ms" '
        'startDate="2026-11-01 23:59:50 +0100" endDate="2026-11-02 00:00:21 +0100" value="38.2">'
        "<HeartRateVariabilityMetadataList>"
        + "".join(beats)
        + "</HeartRateVariabilityMetadataList></Record>\n"
        "</HealthData>\n"
    )
    path = tmp_path / "export.xml"
    path.write_text(body, encoding="utf-8")
    records = _read(path, ctx)
    sdnn = next(r for r in records if r.metric == "hrv_sdnn")
    rmssd = next(r for r in records if r.metric == "hrv_rmssd")
    assert sdnn.value == 38.2 and rmssd.value == pytest.approx(40.0, abs=0.5)
    assert rmssd.start == sdnn.start and rmssd.label == "beats"
