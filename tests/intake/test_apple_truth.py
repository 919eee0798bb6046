"""The Apple importer against generated exports whose truth is known exactly."""

import json
from collections import Counter, defaultdict
from datetime import timedelta

import pytest
from sqlmodel import select

from benchmarks.gen_apple_export import generate
from bridge.intake.ingest import import_file
from bridge.store.models import Reading


def _local(row, field="start_utc"):
    return getattr(row, field) + timedelta(minutes=row.utc_offset_min)


def _nights(rows):
    """Sleep rows grouped into nights (gaps over 3 h split them), keyed by wake-up date."""
    nights, current = [], []
    for row in sorted(rows, key=lambda r: r.start_utc):
        if current and row.start_utc - max(r.end_utc for r in current) > timedelta(hours=3):
            nights.append(current)
            current = []
        current.append(row)
    if current:
        nights.append(current)
    out = defaultdict(Counter)
    for night in nights:
        wake = max(_local(r, "end_utc") for r in night if r.label != "in_bed").date().isoformat()
        for r in night:
            out[wake][r.label] += r.value
    return out


@pytest.mark.parametrize(
    "options",
    [
        {"locale": "en_US"},
        {"locale": "de_DE", "broken_dtd": True, "control_chars": True},
        {"locale": "en_GB", "tz": "-0500"},
    ],
    ids=["en_US", "de_DE-ios16", "en_GB-minus5"],
)
def test_generated_export_matches_its_truth(store, ctx, tmp_path, options):
    path = tmp_path / "export.zip"
    truth = generate(path, days=5, **options)
    assert json.loads(path.with_suffix(".truth.json").read_text()) == json.loads(json.dumps(truth))
    summary = import_file(store, "apple-health", path, ctx)
    assert dict(summary.by_type) == truth["records_by_metric"]
    assert summary.new == summary.records == truth["records_total"]
    with store.session() as s:
        rows = s.exec(select(Reading)).all()

    steps = defaultdict(Counter)
    for r in rows:
        if r.metric == "steps":
            steps[_local(r).date().isoformat()][r.origin] += r.value
    for day, expected in truth["days"].items():
        assert dict(steps.get(day, {})) == expected["steps"], day

    sleep = _nights([r for r in rows if r.metric == "sleep"])
    for day, expected in truth["days"].items():
        got = {k: round(v, 4) for k, v in sleep.get(day, {}).items()}
        assert got == pytest.approx(expected["sleep_min"], abs=1e-3), day

    mindful, workouts = Counter(), Counter()
    for r in rows:
        if r.metric == "mindful":
            mindful[_local(r).date().isoformat()] += r.value
        elif r.metric == "workout":
            workouts[_local(r).date().isoformat()] += 1
    for day, expected in truth["days"].items():
        assert mindful.get(day, 0) == pytest.approx(expected["mindful_min"], abs=1e-3), day
        assert workouts.get(day, 0) == expected["workouts"], day

    again = import_file(store, "apple-health", path, ctx, force=True)
    assert again.new == 0 and store.count(Reading) == truth["records_total"]

    rmssd = [r.value for r in rows if r.metric == "hrv_rmssd"]
    assert rmssd and all(5 < v < 200 for v in rmssd)  # beat times parsed in every locale
    assert {r.device for r in rows if r.metric == "heart_rate"} == {"Apple Watch", "iPhone"}


def test_reimporting_a_newer_overlapping_export_adds_only_new_days(store, ctx, tmp_path):
    older, newer = tmp_path / "old" / "export.zip", tmp_path / "new" / "export.zip"
    generate(older, days=4)
    truth = generate(newer, days=6)  # the same seed: the first 4 days are identical
    first = import_file(store, "apple-health", older, ctx)
    second = import_file(store, "apple-health", newer, ctx)
    assert second.records == truth["records_total"]
    assert 0 < second.new < second.records
    assert store.count(Reading) == truth["records_total"]
    assert second.known >= first.records - 50  # nights and workouts at the edge may differ
