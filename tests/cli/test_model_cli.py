import json

import numpy as np
import pytest
from typer.testing import CliRunner

from bridge.cli.main import app
from bridge.sim.evaluate import evaluate, rolling
from tests.helpers import write_config


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_ci_sized_eval_reports_every_figure():
    report = evaluate("in", n_people=4, slots=40)
    assert set(report["runners"]) == {
        "random",
        "heuristic",
        "bundled",
        "no-prior",
        "linear-ts",
        "oracle",
    }
    b = report["runners"]["bundled"]
    assert set(b["acceptance"]) == {"1-8", "9-28", "29-112"} and len(b["acceptance_curve"]) == 40
    assert (
        b["belief_mae"]["28"] is not None
        and report["runners"]["heuristic"]["belief_mae"]["8"] is None
    )
    assert report["runners"]["oracle"]["belief_mae"]["112"] == 0.0
    assert b["runner_errors"] == 0 and b["latency_ms"]["p50"] > 0
    # even on 4 people, knowing them beats not trying to
    assert b["belief_mae"]["28"] < report["constant_belief_mae"]
    assert b["acceptance"]["9-28"] > report["runners"]["random"]["acceptance"]["9-28"]
    assert {t["target"] for t in report["targets"]} >= {
        "belief MAE after 28 <= 0.12",
        "p50 latency <= 5 ms",
    }


def test_rolling_is_a_trailing_mean():
    assert rolling(np.array([1.0, 0.0, 1.0, 1.0]), 2).tolist() == [1.0, 0.5, 0.5, 1.0]


def test_eval_command_json_and_plot(tmp_path):
    plot = tmp_path / "eval.svg"
    result = invoke("eval", "--split", "ood", "--people", "2", "--json", "--plot", plot)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["split"] == "ood" and doc["people"] == 2
    assert any(t["target"].startswith("OOD belief MAE") for t in doc["targets"])
    svg = plot.read_text()
    assert svg.startswith("<svg") and svg.count("<polyline") == 6 and "bundled" in svg
    bad = invoke("eval", "--split", "test")
    assert bad.exit_code == 2 and "--split 'test'" in bad.stderr


# (command, runner it feeds, what it says, arrays that must repeat, runner version)
TRAINERS = [
    (
        "train-model",
        "bundled",
        "trained on {n} simulated people",
        ("accept_w", "delta_w", "delta_sd"),
        "5-seed{seed}",
    ),
    (
        "train-transfer",
        "transfer",
        "fitted on {n} randomized people",
        ("alpha", "beta", "delta", "prior_cov"),
        "1-seed{seed}",
    ),
]


@pytest.mark.parametrize("trainer", TRAINERS, ids=[t[0] for t in TRAINERS])
def test_a_trained_model_is_reproducible_and_its_runner_reads_it(tmp_path, trainer):
    from bridge.runner import load_runner

    command, runner, said, keys, version = trainer
    seed, n = 5, 12
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    for out in (a, b):
        result = invoke(command, "--seed", seed, "--people", n, "--out", out)
        assert result.exit_code == 0, result.output
        assert said.format(n=n) in result.stdout
    with np.load(a, allow_pickle=False) as x, np.load(b, allow_pickle=False) as y:
        assert json.loads(str(x["meta"]))["seed"] == seed
        for key in keys:
            assert np.array_equal(x[key], y[key])
    rec = load_runner(runner, model=str(a)).recommend({"slot": 0}, [])
    assert rec.runner == runner and rec.runner_version == version.format(seed=seed)


def test_recommend_from_state_and_history_files(tmp_path):
    cfg = write_config(tmp_path / "config.toml", tmp_path / "data")
    state = tmp_path / "state.json"
    state.write_text(
        json.dumps(
            {
                "day": 1,
                "slot": 2,
                "vitality": 0.4,
                "cognition": 0.5,
                "progress": 0.6,
                "serenity": 0.5,
                "connection": None,
            }
        )
    )
    history = tmp_path / "history.json"
    history.write_text(
        json.dumps(
            [
                {
                    "day": 0,
                    "slot": 2,
                    "meters": {"vitality": 0.5},
                    "action": "SOCIALIZE",
                    "response": "ignored",
                    "meter_deltas": {},
                },
            ]
        )
    )
    result = invoke("--config", cfg, "recommend", "--state", state, "--history", history, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["runner"] == "bundled" and len(doc["belief"]) == 3 and doc["fallback_reason"] is None
    text = invoke("--config", cfg, "recommend", "--state", state)
    assert text.exit_code == 0 and "[bundled]" in text.stdout
    assert not (tmp_path / "data" / "rhythm-bridge.db").exists()  # nothing stored


@pytest.mark.parametrize(
    ("state", "history", "message"),
    [
        ({"slot": 5}, [], "'slot' must be an integer 0-3"),
        ({"vitality": 0.5}, [], "'slot' is missing"),
        ({"slot": 1, "vitality": 1.5}, [], "'vitality' must be a number in [0, 1]"),
        ({"slot": 1}, [{"slot": 0, "action": "NAP", "response": "accepted"}], "item 0: 'action'"),
        ({"slot": 1}, [{"slot": 0, "action": "SLEEP", "response": "yes"}], "item 0: 'response'"),
        ({"slot": 1}, {"not": "a list"}, "must be a JSON array"),
    ],
)
def test_recommend_rejects_bad_documents_with_one_line(tmp_path, state, history, message):
    cfg = write_config(tmp_path / "config.toml", tmp_path / "data")
    (tmp_path / "s.json").write_text(json.dumps(state))
    (tmp_path / "h.json").write_text(json.dumps(history))
    result = invoke(
        "--config",
        cfg,
        "recommend",
        "--state",
        tmp_path / "s.json",
        "--history",
        tmp_path / "h.json",
    )
    assert (
        result.exit_code == 2 and message in result.stderr and len(result.stderr.splitlines()) == 1
    )


def test_recommend_history_needs_state_and_json(tmp_path):
    cfg = write_config(tmp_path / "config.toml", tmp_path / "data")
    (tmp_path / "h.json").write_text("[")
    assert (
        "needs --state"
        in invoke("--config", cfg, "recommend", "--history", tmp_path / "h.json").stderr
    )
    (tmp_path / "s.json").write_text("{oops")
    assert (
        "not valid JSON"
        in invoke("--config", cfg, "recommend", "--state", tmp_path / "s.json").stderr
    )
