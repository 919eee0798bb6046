"""`import readings FILE.csv`: the documented long format, bad rows counted and skipped."""

from collections import Counter

import pytest
from typer.testing import CliRunner

from bridge.cli.main import app
from bridge.errors import InputError
from bridge.intake.ingest import import_file
from bridge.store.models import Reading
from connectors import readings
from connectors.base import ReadingRecord, Skipped
from connectors.registry import BY_NAME
from mappings.frames import USED_METRICS
from mappings.vocabulary import VENDOR_SCORES
from tests.conftest import FIXTURES
from tests.helpers import write_config

OURA = FIXTURES / "readings" / "oura.csv"


def test_every_metric_the_meters_read_has_a_name_in_the_format():
    # The format is the way in for any device: every metric an input reads is accepted.
    assert set(readings.UNITS) >= USED_METRICS
    assert set(readings.UNITS) == BY_NAME["readings"].provides
    assert {s.metric for s in VENDOR_SCORES} - {"stress_score"} <= set(readings.UNITS)


def test_the_documented_example_is_read(ctx):
    records = list(readings.read(OURA, ctx))
    good = [r for r in records if isinstance(r, ReadingRecord)]
    assert Counter(r.metric for r in good) == {
        "sleep": 6,
        "hrv_rmssd": 1,
        "resting_hr": 1,
        "readiness_score": 1,
        "steps": 1,
        "workout": 1,
    }
    stages = Counter()
    for r in good:
        if r.metric == "sleep":
            stages[r.label] += r.value
    assert stages == {"in_bed": 465, "core": 230, "deep": 80, "awake": 10, "rem": 110}
    hrv = next(r for r in good if r.metric == "hrv_rmssd")
    assert hrv.start == hrv.end and hrv.origin == "Oura" and hrv.unit == "ms"
    steps = next(r for r in good if r.metric == "steps")
    assert steps.start.isoformat() == "2026-11-18T00:00:00+01:00" and steps.value == 8412
    workout = next(r for r in good if r.metric == "workout")
    # No offset: the person's zone; an empty value counts the span's minutes.
    assert workout.start.isoformat() == "2026-11-18T12:10:00+01:00" and workout.value == 45
    skipped = [r for r in records if isinstance(r, Skipped)]
    assert Counter(s.kind for s in skipped) == {
        "unknown metric": 1,
        "readings hrv_sdnn": 1,
        "readings resting_hr": 1,
        "readings sleep": 2,
    }
    assert all(str(OURA) in s.reason for s in skipped)
    assert any(":15: unit 'Hz' for resting_hr" in s.reason for s in skipped)


def test_import_twice_adds_nothing_and_a_corrected_value_replaces(store, ctx, tmp_path):
    first = import_file(store, "readings", OURA, ctx)
    assert first.new == first.records == store.count(Reading) == 11
    assert sum(first.skipped.values()) == 5
    assert import_file(store, "readings", OURA, ctx).skipped_same_file
    fixed = tmp_path / "fixed.csv"
    fixed.write_text(OURA.read_text().replace("hrv_rmssd,41.5", "hrv_rmssd,43"))
    second = import_file(store, "readings", fixed, ctx)
    assert second.new == 1 and store.count(Reading) == 11  # one value changed, no new row


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "empty; the first line names the columns"),
        ("when,what,value\n2026-11-18,steps,1\n", "no 'start' column"),
        (b"start,metric,value\n2026-11-18,st\xffeps,1\n", "not UTF-8"),
    ],
)
def test_a_file_without_the_format_is_refused(store, ctx, tmp_path, text, needle):
    path = tmp_path / "bad.csv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(InputError, match=needle) as err:
        import_file(store, "readings", path, ctx)
    assert str(path) in str(err.value) and store.count(Reading) == 0


def test_the_cli_reports_the_skipped_rows(tmp_path):
    cfg = write_config(tmp_path / "c.toml", tmp_path / "data")
    result = CliRunner().invoke(app, ["--config", str(cfg), "import", "readings", str(OURA)])
    assert result.exit_code == 0, result.output
    assert "11 records" in result.output
    assert "5 skipped as unreadable or implausible" in result.output
    assert "unknown metric 1" in result.output
