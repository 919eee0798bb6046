"""The pipeline's meter step: incremental by default, equal to a full recompute."""

import json
from datetime import UTC, timedelta

import pytest
from sqlalchemy import select, update
from typer.testing import CliRunner

from bridge.cli.core import state as _state
from bridge.cli.main import app
from bridge.cycle.meters import recompute_meters
from bridge.intake.ingest import import_file
from bridge.store import upsert
from bridge.store.models import CalendarEvent, MeterSnapshot, Reading
from connectors.base import ReadingRecord
from tests.conftest import DEMO_NOW, SAMPLE
from tests.helpers import meter_snapshot, write_config


def load_sample(store, ctx):
    """The bundled sample (33 days from 2026-10-17), events labelled as classify would."""
    import_file(store, "apple-health", SAMPLE / "apple_health_export.zip", ctx)
    import_file(store, "ics", SAMPLE / "calendar.ics", ctx)
    with store.transaction() as session:  # what the classify step would have done
        session.execute(update(CalendarEvent).values(action="ADMIN_WORK"))
    return store


@pytest.fixture
def loaded(store, ctx):
    return load_sample(store, ctx)


def snapshots(store):
    with store.session() as session:
        rows = session.execute(
            select(MeterSnapshot).order_by(MeterSnapshot.local_date, MeterSnapshot.slot)
        ).scalars()
        return {
            (r.local_date, r.slot): (
                r.vitality,
                r.cognition,
                r.progress,
                r.serenity,
                r.connection,
                r.vitality_confidence,
                r.provenance,
                r.deltas,
                r.mapping_version,
            )
            for r in rows
        }


def add_reading(store, metric, start, value, minutes=1):
    rec = ReadingRecord(metric, start, start + timedelta(minutes=minutes), value, origin="Watch")
    with store.transaction() as session:
        upsert(
            session,
            Reading,
            [rec.row("apple_health", DEMO_NOW.astimezone(UTC))],
            keys=("source", "metric", "origin", "start_utc", "end_utc", "label"),
            update=("value",),
        )


# The bundled sample starts on 2026-10-17: 33 days of 4 slots up to the 18th's night,
# plus this morning. Every one is computed, not only the export window's week.
HISTORY = 33 * 4 + 1


def test_a_second_run_recomputes_only_the_current_slot(loaded, settings):
    assert recompute_meters(loaded, settings, DEMO_NOW) == HISTORY
    before = snapshots(loaded)
    assert recompute_meters(loaded, settings, DEMO_NOW) == 1
    assert snapshots(loaded) == before


def test_the_next_slot_recomputes_the_one_that_was_current_too(loaded, settings):
    recompute_meters(loaded, settings, DEMO_NOW)  # morning, 08:40
    assert recompute_meters(loaded, settings, DEMO_NOW + timedelta(hours=5)) == 2


def test_a_new_night_is_incremental_and_equals_a_full_recompute(loaded, settings):
    yesterday = DEMO_NOW - timedelta(days=1)
    recompute_meters(loaded, settings, yesterday)
    # Overnight: a short night, a low HRV and a high resting heart rate arrive.
    add_reading(loaded, "sleep", DEMO_NOW.replace(hour=1), None, minutes=240)
    add_reading(loaded, "hrv_sdnn", DEMO_NOW.replace(hour=3), 21.0)
    add_reading(loaded, "resting_hr", DEMO_NOW.replace(hour=7), 75.0)
    done = recompute_meters(loaded, settings, DEMO_NOW)
    assert done < 4 * 6 + 1
    incremental = snapshots(loaded)
    assert recompute_meters(loaded, settings, DEMO_NOW, full=True) == HISTORY
    assert snapshots(loaded) == incremental


def test_a_changed_old_value_recomputes_from_the_day_before_it(loaded, settings):
    recompute_meters(loaded, settings, DEMO_NOW)
    three_days_ago = DEMO_NOW - timedelta(days=3)  # Monday the 16th
    add_reading(loaded, "resting_hr", three_days_ago.replace(hour=12), 90.0)
    # From the 15th's morning to this morning: 4 days of 4 slots, plus 1.
    assert recompute_meters(loaded, settings, DEMO_NOW) == 4 * 4 + 1
    incremental = snapshots(loaded)
    recompute_meters(loaded, settings, DEMO_NOW, full=True)
    assert snapshots(loaded) == incremental


def test_new_weights_mean_a_full_recompute(loaded, settings, monkeypatch):
    recompute_meters(loaded, settings, DEMO_NOW)
    from mappings import meters

    real = meters.load_weights()
    bumped = meters.Weights(
        "test.2",
        real.meters,
        real.targets,
        real.step_priority,
        real.focus_credit,
        real.deadline_keywords,
    )
    monkeypatch.setattr(meters, "load_weights", lambda path=None: bumped)
    assert recompute_meters(loaded, settings, DEMO_NOW) == HISTORY
    assert {row[-1] for row in snapshots(loaded).values()} == {"test.2"}


@pytest.mark.sqlite_only  # `demo` always builds its own embedded SQLite store
def test_meters_explain_from_the_cli(tmp_path):
    _state.clear()
    cli = CliRunner()
    data = tmp_path / "demo"
    assert cli.invoke(app, ["demo", "--data-dir", str(data)]).exit_code == 0
    _state.clear()
    cfg = write_config(tmp_path / "config.toml", data)
    try:
        result = cli.invoke(
            app,
            ["--config", str(cfg), "meters", "--date", "2026-11-19", "--slot", "0", "--explain"],
        )
        as_json = cli.invoke(
            app, ["--config", str(cfg), "meters", "--date", "2026-11-19", "--slot", "0", "--json"]
        )
    finally:
        if _state.get("store") is not None:
            _state["store"].dispose()
        _state.clear()
    assert result.exit_code == 0, result.output
    out = result.output
    assert "2026-11-19 morning (timestep 12)" in out and "a meter = 0.50 + the effects" in out
    assert "sleep_duration" in out and "score" in out and "weight" in out
    (doc,) = json.loads(as_json.output)
    vit = doc["provenance"]["vitality"]
    effects = sum(i["effect"] for i in vit["inputs"])
    assert doc["vitality"] == pytest.approx(0.5 + effects, abs=1e-3)
    for item in vit["inputs"]:  # every input named in the text with its signed effect
        assert f"{item['effect']:+.3f}" in out
    # ... and what moved it since the slot before (the night of the 18th).
    assert f"change since 2026-11-18 night: {doc['deltas']['vitality']:+.3f} (" in out


def add_event(store, uid, title, start, hours=1.0):
    row = {
        "source": "ics",
        "calendar_id": "test",
        "uid": uid,
        "title": title,
        "start_utc": start.astimezone(UTC),
        "end_utc": (start + timedelta(hours=hours)).astimezone(UTC),
        "action": "ADMIN_WORK",
        "updated_at": DEMO_NOW.astimezone(UTC),
    }
    with store.transaction() as session:
        upsert(
            session, CalendarEvent, [row], keys=("source", "calendar_id", "uid", "recurrence_id")
        )


def test_a_new_event_reaches_back_a_day_and_a_deadline_a_week(loaded, settings):
    recompute_meters(loaded, settings, DEMO_NOW)
    add_event(loaded, "lunch", "Lunch with Sam", DEMO_NOW + timedelta(days=1))
    assert recompute_meters(loaded, settings, DEMO_NOW) == 1  # only this morning
    add_event(loaded, "report", "Quarterly report due", DEMO_NOW + timedelta(days=3))
    # Due on the 22nd: slots from the 14th on see it coming (5 days of 4, plus this one).
    assert recompute_meters(loaded, settings, DEMO_NOW) == 5 * 4 + 1
    incremental = snapshots(loaded)
    recompute_meters(loaded, settings, DEMO_NOW, full=True)
    assert snapshots(loaded) == incremental


def test_own_weights_are_laid_over_the_bundled_ones(loaded, settings, tmp_path):
    own = tmp_path / "weights.toml"
    own.write_text('version = "mine.1"\n[connection]\nsocial_week = 2.0\n[vitality]\nsteps = 0.0\n')
    settings = settings.model_copy(
        update={"meters": settings.meters.model_copy(update={"weights_file": str(own)})}
    )
    recompute_meters(loaded, settings, DEMO_NOW)
    snap = meter_snapshot(loaded, DEMO_NOW.date(), 0)
    prov = json.loads(snap.provenance)
    assert snap.mapping_version == "mine.1"
    assert prov["connection"]["inputs"][0]["weight"] == 2.0
    assert "steps" not in {i["name"] for i in prov["vitality"]["inputs"]}
    assert {i["name"] for i in prov["vitality"]["inputs"]} >= {"sleep_duration", "hrv"}


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[vitality]\nsteps = 0.1\n", "set `version`"),
        ('version = "x"\n[vitality]\nstep = 0.1\n', "[vitality] step: unknown input"),
        ('version = "x"\n[serenity]\nhrv = -1\n', "[serenity] hrv: a weight cannot be negative"),
        ('version = "x"\n[serenity]\nhrv = "a lot"\n', "each meter is a table of numbers"),
        ("version = \n", "not valid TOML"),
    ],
)
def test_a_bad_weights_file_is_one_clear_config_error(loaded, settings, tmp_path, text, needle):
    from bridge.errors import ConfigError

    own = tmp_path / "weights.toml"
    own.write_text(text)
    settings = settings.model_copy(
        update={"meters": settings.meters.model_copy(update={"weights_file": str(own)})}
    )
    with pytest.raises(ConfigError, match=r"meters\.weights_file") as err:
        recompute_meters(loaded, settings, DEMO_NOW)
    assert needle in str(err.value) and str(own) in str(err.value)
    assert loaded.count(MeterSnapshot) == 0  # nothing half-written


def test_a_lost_slot_is_recomputed_with_its_delta(loaded, settings):
    from sqlalchemy import delete

    recompute_meters(loaded, settings, DEMO_NOW)
    full = snapshots(loaded)
    three_days_ago = (DEMO_NOW - timedelta(days=3)).date()
    with loaded.transaction() as session:
        session.execute(
            delete(MeterSnapshot).where(
                MeterSnapshot.local_date == three_days_ago, MeterSnapshot.slot == 2
            )
        )
    assert recompute_meters(loaded, settings, DEMO_NOW) == 4 * 3 - 2 + 1  # from there on
    assert snapshots(loaded) == full
