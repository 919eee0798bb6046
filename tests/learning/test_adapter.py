import json
import logging
from datetime import UTC, date, datetime, timedelta

import numpy as np
import pytest

from bridge.cycle.recommend import configured_runner, recommend
from bridge.errors import InputError
from bridge.learning.adapter import refit
from bridge.learning.feedback import record_feedback
from bridge.runner.adapter import fit_adapter, load_adapter
from bridge.runner.bundled import BundledRunner, load_model
from bridge.sim.episode import run_episode
from bridge.sim.population import people
from bridge.store.models import Recommendation
from tests.conftest import DEMO_NOW


def store_answers(store, days, answer):
    """Recommendations for the past `days` days (4 slots each) and their answers."""
    today = DEMO_NOW.date()
    rows = []
    with store.transaction() as session:
        for d in range(days, 0, -1):
            for slot in range(4):
                action = ("BINGE_WATCH", "DEEP_WORK", "SOCIALIZE", "SLEEP")[slot]
                rec = Recommendation(
                    local_date=today - timedelta(days=d),
                    slot=slot,
                    timestep=slot,
                    action=action,
                    runner="bundled",
                    created_at=datetime.now(UTC),
                )
                session.add(rec)
                rows.append(rec)
        session.flush()
        ids = [(r.id, r.action) for r in rows]
    for rid, action in ids:
        record_feedback(store, rid, answer(action))
    return ids


def test_fitted_adapter_knows_the_person_and_their_dislikes(rhythm_model):
    # A rhythm person read by a model of the rhythm simulator (the shipped model is a
    # mixture of families; tests/sim/test_sim_families.py and docs/evaluation/model.md
    # measure that one).
    model = load_model(rhythm_model)
    person = people("in", 1)[0]
    runner = BundledRunner(rhythm_model)
    ep = run_episode(runner, person, 56)
    history = ep.history()
    doc = fit_adapter(history, model)
    assert doc["answers"] == 56 and set(doc["action_bias"]) >= {"SLEEP", "DEEP_WORK"}
    assert np.abs(np.array(doc["belief_mean"]) - person.belief).mean() < 0.12


def test_refit_writes_the_adapter_and_the_runner_starts_from_it(store, settings, caplog):
    assert refit(store, settings, DEMO_NOW) is None  # no answers yet: nothing written
    assert not (settings.data_path / "adapter.json").exists()
    store_answers(store, 10, lambda a: "ignored" if a == "BINGE_WATCH" else "accepted")
    doc = refit(store, settings, DEMO_NOW)
    saved = json.loads((settings.data_path / "adapter.json").read_text())
    assert saved == doc and doc["answers"] == 40
    assert doc["through"] == (DEMO_NOW.date() - timedelta(days=1)).isoformat()
    bias = doc["action_bias"]
    assert bias["BINGE_WATCH"] < 0 and bias["BINGE_WATCH"] < min(bias["SLEEP"], bias["SOCIALIZE"])
    runner = configured_runner(settings)
    assert runner.history_since == date.fromisoformat(doc["through"]) and runner.bias is not None
    fresh = BundledRunner().recommend({"slot": 2}, []).belief
    assert runner.recommend({"slot": 2}, []).belief != fresh  # prior comes from the adapter
    rec = recommend(store, settings, DEMO_NOW)
    assert rec.runner == "bundled"
    # a damaged adapter is ignored with a warning, never a failed cycle
    (settings.data_path / "adapter.json").write_text("{")
    with caplog.at_level(logging.WARNING):
        assert configured_runner(settings).history_since is None
    assert "ignoring the adapter" in caplog.text
    with pytest.raises(InputError, match="not a usable adapter"):
        load_adapter(settings.data_path / "adapter.json", load_model())


def test_the_daemon_job_refits_only_when_the_adapter_is_stale(store, settings):
    import os

    from bridge.daemon.scheduler import _refit_adapter

    store_answers(store, 6, lambda a: "accepted")
    path = settings.data_path / "adapter.json"
    _refit_adapter(settings, store)
    assert path.exists()
    os.utime(path, (1_000_000, 1_000_000))  # an old file is refitted...
    _refit_adapter(settings, store)
    fresh = path.stat().st_mtime
    assert fresh > 1_000_000
    _refit_adapter(settings, store)  # ...a fresh one is left alone
    assert path.stat().st_mtime == fresh


def test_export_training_data_is_chat_jsonl_with_rewards(store, settings, tmp_path):
    import stat

    from typer.testing import CliRunner

    from bridge.cli.core import state as _state
    from bridge.cli.main import app
    from bridge.learning.training_data import write_training_data
    from tests.helpers import write_config

    ids = store_answers(store, 2, lambda a: "accepted" if a == "SLEEP" else "ignored")
    record_feedback(store, ids[0][0], "accepted")  # a repeat answer changes nothing
    out = tmp_path / "train.jsonl"
    assert write_training_data(store, settings, out) == 8
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    first, last = lines[0], lines[-1]
    assert [m["role"] for m in first["messages"]] == ["system", "user", "assistant"]
    assert "(none yet)" in first["messages"][1]["content"]
    assert first["reward"] == -1.0 and first["response"] == "ignored"
    assert last["reward"] == 1.0 and last["messages"][2]["content"].endswith("\n4 4 4 SLEEP")
    # the last example's prompt holds the 7 earlier answers, in the seed's format
    assert last["messages"][1]["content"].count("-> recommended") == 7
    assert "-> recommended SOCIALIZE -> user: IGNORED" in last["messages"][1]["content"]
    # through the CLI
    cfg = write_config(tmp_path / "c.toml", settings.data_path)
    _state.clear()
    try:
        result = CliRunner().invoke(
            app, ["--config", str(cfg), "export", "--training-data", str(tmp_path / "cli.jsonl")]
        )
        assert result.exit_code == 0, result.output
        assert "wrote 8 examples" in result.stdout
    finally:
        if _state.get("store") is not None:
            _state["store"].dispose()
        _state.clear()
