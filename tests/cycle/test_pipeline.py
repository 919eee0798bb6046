import copy
import json
import threading
from datetime import timedelta

import jsonschema
import pytest

from bridge.clock import target_slot
from bridge.cycle.run import data_lock, run_cycle
from bridge.errors import BridgeError
from bridge.intake.ingest import import_file
from bridge.learning.feedback import record_feedback
from bridge.learning.history import interaction_history
from bridge.runner.base import STATED
from bridge.store.models import CalendarEvent, Feedback, MeterSnapshot, Reading, Recommendation
from mappings.actions import ACTIONS
from tests.conftest import DEMO_NOW, SAMPLE
from tests.helpers import validate_snapshot

TABLES = (Reading, CalendarEvent, MeterSnapshot, Recommendation, Feedback)


@pytest.fixture
def loaded(store, settings, ctx):
    import_file(store, "apple-health", SAMPLE / "apple_health_export.zip", ctx)
    import_file(store, "ics", SAMPLE / "calendar.ics", ctx)
    return store


def test_a_cycle_twice_leaves_the_same_rows(loaded, settings):
    first = run_cycle(settings, loaded, now=DEMO_NOW)
    counts = {t.__name__: loaded.count(t) for t in TABLES}
    snapshot = json.loads(settings.export_path.read_text())
    second = run_cycle(settings, loaded, now=DEMO_NOW)
    assert {t.__name__: loaded.count(t) for t in TABLES} == counts
    assert first.classified == counts["CalendarEvent"] and second.classified == 0
    assert second.recommendation == first.recommendation
    assert json.loads(settings.export_path.read_text())["slots"] == snapshot["slots"]
    # Every slot since the sample's first day (2026-10-17) up to this morning; the
    # snapshot itself keeps the export window: six full days before + this morning.
    assert counts["MeterSnapshot"] == 33 * 4 + 1
    assert len(snapshot["slots"]) == 4 * 6 + 1


def test_the_snapshot_matches_its_schema_and_its_rules(loaded, settings):
    run_cycle(settings, loaded, now=DEMO_NOW)
    doc = json.loads(settings.export_path.read_text())
    validate_snapshot(doc)
    assert doc["schema"] == "rhythm-bridge/snapshot@1.3"
    assert doc["recommendation"]["action"] in ACTIONS
    assert doc["current"]["date"] == "2026-11-19" and doc["current"]["timestep"] == 12
    for slot in doc["slots"]:
        for m in ("vitality", "cognition", "progress", "serenity", "connection"):
            assert slot[m] is None or 0 <= slot[m] <= 1
    assert [e["title"] for e in doc["events_today"]][:2] == ["Gym - 7am", "Team standup"]


def test_the_schema_rejects_a_null_meter_without_a_reason(loaded, settings):
    run_cycle(settings, loaded, now=DEMO_NOW)
    doc = json.loads(settings.export_path.read_text())
    bad = copy.deepcopy(doc)
    bad["current"]["vitality"] = None
    with pytest.raises(jsonschema.ValidationError):
        validate_snapshot(bad)
    bad = copy.deepcopy(doc)
    bad["current"]["cognition"] = 1.3
    with pytest.raises(jsonschema.ValidationError):
        validate_snapshot(bad)


def test_an_empty_store_gives_null_meters_and_still_a_recommendation(store, settings):
    run_cycle(settings, store, now=DEMO_NOW)
    doc = json.loads(settings.export_path.read_text())
    validate_snapshot(doc)
    assert doc["current"]["vitality"] is None
    assert doc["recommendation"]["action"] in ACTIONS


def test_the_recommendation_targets_the_next_slot_near_a_slot_end(settings):
    key = target_slot(settings, DEMO_NOW.replace(hour=11, minute=45))
    assert (key.local_date.day, key.slot) == (19, 1)


def test_feedback_is_idempotent_and_feeds_the_history(loaded, settings):
    yesterday = DEMO_NOW - timedelta(days=1)
    rec = run_cycle(settings, loaded, now=yesterday).recommendation
    fb, created = record_feedback(loaded, rec["id"], "accept")
    again, created_again = record_feedback(loaded, rec["id"], "ignore")
    assert created and not created_again and again.response == "accepted" and fb.reward == 1.0
    run_cycle(settings, loaded, now=DEMO_NOW)
    history = interaction_history(loaded, target_slot(settings, DEMO_NOW))
    assert len(history) == 1
    entry = history[0]
    assert entry["response"] == "accepted" and entry["action"] == rec["action"]
    # What the runner stated then comes back with the answer (bridge.runner.recalibrate).
    with loaded.session() as session:
        stored = session.get(Recommendation, rec["id"])
        assert stored is not None and stored.runner == "bundled"
        assert 0 < entry[STATED] == stored.model_accept < 1
    assert (
        set(entry["meters"])
        == set(entry["meter_deltas"])
        == {"vitality", "cognition", "progress", "serenity", "connection"}
    )


def test_feedback_for_an_unknown_recommendation(store):
    with pytest.raises(BridgeError, match="no recommendation with id 42"):
        record_feedback(store, 42, "accept")


def test_one_cycle_at_a_time(settings):
    held = threading.Event()
    release = threading.Event()

    def hold():
        with data_lock(settings.data_path):
            held.set()
            release.wait(5)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(5)
    try:
        with (
            pytest.raises(BridgeError, match="another rhythm-bridge cycle"),
            data_lock(settings.data_path, timeout=0.3),
        ):
            pass
    finally:
        release.set()
        t.join()
    with data_lock(settings.data_path, timeout=1):
        pass


def test_a_failing_source_is_recorded_and_the_cycle_goes_on(store, settings, tmp_path):
    bad = tmp_path / "broken.ics"
    bad.write_text("<html>not a calendar</html>")
    settings = settings.model_copy(
        update={
            "sources": settings.sources.model_copy(
                update={
                    "ics": settings.sources.ics.model_copy(
                        update={"enabled": True, "paths": [str(bad)]}
                    )
                }
            )
        }
    )
    report = run_cycle(settings, store, now=DEMO_NOW)
    (outcome,) = report.synced
    assert outcome.status == "error" and "HTML page" in outcome.error
    doc = json.loads(settings.export_path.read_text())
    assert doc["sources"][0]["status"] == "error"
    assert report.recommendation["action"] in ACTIONS
