"""Vendor scores kept for reference: declared once, shown beside the meters (status, the
snapshot, the page), and left out of the meters by one switch of the weights file."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bridge.intake.ingest import import_file
from bridge.out.snapshot import build_snapshot, vendor_score_documents
from bridge.out.status import collect_status, status_lines
from connectors.registry import SOURCES
from connectors.validate import RANGES
from mappings.actions import METERS
from mappings.meters import WeightsError, load_weights
from mappings.vocabulary import BY_NAME, VENDOR_INPUTS, VENDOR_SCORES
from tests.conftest import DEMO_NOW
from tests.connectors.test_fitbit import TAKEOUT
from tests.helpers import validate_snapshot
from tests.web.test_web_api import client


def test_every_vendor_score_is_stored_by_a_source_and_has_a_range():
    provided = {m for spec in SOURCES for m in spec.provides}
    for score in VENDOR_SCORES:
        assert score.metric in provided and score.metric in RANGES, score.metric
        assert set(score.inputs) <= set(BY_NAME), score.metric


def test_as_inputs_false_leaves_the_vendor_composites_out_of_every_meter(tmp_path):
    bundled = load_weights()
    assert bundled.vendor_inputs and {"recovery", "body_battery"} <= VENDOR_INPUTS
    assert "recovery" in bundled.meters["vitality"]
    own = tmp_path / "weights.toml"
    own.write_text('version = "no-vendor.1"\n[vendor_scores]\nas_inputs = false\n')
    mine = load_weights(own)
    assert not mine.vendor_inputs and mine.version == "no-vendor.1"
    for meter in METERS:
        assert not set(mine.meters[meter]) & VENDOR_INPUTS, meter
        kept = {k: w for k, w in bundled.meters[meter].items() if k not in VENDOR_INPUTS}
        assert mine.meters[meter] == kept
    own.write_text('version = "x"\n[vendor_scores]\nas_inputs = "no"\n')
    with pytest.raises(WeightsError, match=r"\[vendor_scores\] as_inputs is true or false"):
        load_weights(own)


@pytest.fixture
def with_fitbit(demo, ctx):
    settings, store = demo
    import_file(store, "fitbit", TAKEOUT, ctx)
    return settings, store


def test_the_newest_score_per_source_is_shown_beside_the_meters(with_fitbit, memory_keyring):
    settings, store = with_fitbit
    docs = vendor_score_documents(store, DEMO_NOW)
    fitbit = {d["metric"]: d for d in docs if d["source"] == "fitbit"}
    assert fitbit["sleep_score"]["value"] == 82
    assert fitbit["sleep_score"]["at"] == "2026-11-18T05:40:00Z"
    assert fitbit["readiness_score"]["value"] == 68 and fitbit["stress_score"]["value"] == 76
    # 36 hours later, nothing is "beside" today's meters any more.
    assert not vendor_score_documents(store, DEMO_NOW + timedelta(days=3))

    status = collect_status(settings, store, DEMO_NOW)
    assert status["vendor_scores"] == docs
    text = "\n".join(status_lines(status, DEMO_NOW, settings.tz))
    assert "vendor scores (for reference):" in text and "sleep score" in text

    snapshot = build_snapshot(store, settings, DEMO_NOW)
    assert snapshot["vendor_scores"] == docs
    validate_snapshot(snapshot)

    with client(settings, store) as c:
        html = c.get("/").text
    assert (
        'data-testid="vendor-scores"' in html and "Fitbit sleep score <strong>82</strong>" in html
    )
