import json
import zipfile

import numpy as np
import pytest

from bridge.runner import load_runner
from bridge.runner.bundled import default_model_path
from bridge.sim.episode import history_item
from mappings.actions import ACTIONS, METERS

OBS = {
    "timestep": 8,
    "day": 2,
    "slot": 0,
    "vitality": 0.7,
    "cognition": 0.6,
    "progress": 0.5,
    "serenity": 0.6,
    "connection": 0.5,
}
M = np.array([0.7, 0.6, 0.5, 0.6, 0.5])


def item(slot, action, response, deltas=None):
    return {
        "day": 0,
        "slot": slot,
        "meters": dict(zip(METERS, M.tolist(), strict=True)),
        "action": action,
        "response": response,
        "meter_deltas": deltas or {m: None for m in METERS},
    }


def test_artifact_is_small_npz_without_pickled_objects():
    path = default_model_path()
    assert path.stat().st_size <= 5 * 1024 * 1024
    with zipfile.ZipFile(path) as z:
        assert {n.split(".")[0] for n in z.namelist()} == {
            "meta",
            "accept_w",
            "delta_w",
            "delta_sd",
        }
    with np.load(path, allow_pickle=False) as data:  # raises if anything needed pickle
        meta = json.loads(str(data["meta"]))
    assert meta["split"] == "train" and isinstance(meta["seed"], int)


def test_bundled_returns_action_belief_and_one_line_rationale():
    rec = load_runner("bundled").recommend(OBS, [])
    assert (
        rec.action in ACTIONS
        and rec.runner == "bundled"
        and rec.runner_version.startswith("3-seed")
    )
    assert len(rec.belief) == 3 and all(0 <= b <= 1 for b in rec.belief)
    assert "\n" not in rec.rationale and "no answers yet" in rec.rationale


def test_ignored_morning_deep_work_points_to_a_late_chronotype():
    runner = load_runner("bundled")
    prior = runner.recommend(OBS, []).belief
    history = [item(0, "DEEP_WORK", "ignored") for _ in range(3)]
    history += [item(2, "DEEP_WORK", "accepted") for _ in range(2)]
    rec = runner.recommend(OBS, history)
    assert rec.belief[1] < prior[1] - 0.1  # M (morning preference) went down
    assert "morning DEEP_WORK ignored 3x" in rec.rationale and "late chronotype" in rec.rationale


def test_meter_changes_after_socializing_reveal_social_preference():
    runner = load_runner("bundled")
    drained = {
        "vitality": -0.12,
        "cognition": -0.03,
        "progress": -0.02,
        "serenity": -0.03,
        "connection": 0.14,
    }
    charged = {
        "vitality": +0.06,
        "cognition": -0.03,
        "progress": -0.02,
        "serenity": 0.05,
        "connection": 0.14,
    }
    low = runner.recommend(OBS, [item(2, "SOCIALIZE", "accepted", drained)] * 2).belief[0]
    high = runner.recommend(OBS, [item(2, "SOCIALIZE", "accepted", charged)] * 2).belief[0]
    assert low < 0.35 < 0.65 < high


def test_it_never_recommends_what_would_crash_a_meter():
    obs = {**OBS, "slot": 1, "vitality": 0.12, "cognition": 0.12}
    history = [item(1, "DEEP_WORK", "accepted") for _ in range(6)]  # a keen worker
    rec = load_runner("bundled").recommend(obs, history)
    assert rec.action not in ("DEEP_WORK", "ADMIN_WORK", "LEARN", "SOCIALIZE")


def test_copes_with_unknown_meters_and_unanswered_items():
    obs = {**OBS, **{m: None for m in METERS}}
    history = [item(0, "EXERCISE", "expired"), {**item(1, "LEARN", "rescheduled"), "meters": {}}]
    rec = load_runner("bundled").recommend(obs, history)
    assert rec.action in ACTIONS and len(rec.belief) == 3


def test_history_item_from_the_simulator_has_the_contract_shape():
    it = history_item(5, M, "SLEEP", True, M + 0.1)
    assert set(it) == {"day", "slot", "meters", "action", "response", "meter_deltas"}
    assert it["response"] == "accepted" and it["meter_deltas"]["vitality"] == pytest.approx(0.1)
