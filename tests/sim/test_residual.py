"""Issue 22: a per-person correction of the acceptance model on top of the population
prior (bridge.sim.residual, a trial run by bridge.sim.trials): none (tau = 0) is exactly
the shipped runner, an old artifact loads without one, with one a person's own favourite
wins more often, and the runtime runner refuses an artifact that asks for one."""

import json

import numpy as np
import pytest

import bridge.sim.trials as trials
from bridge.errors import InputError
from bridge.runner.bundled import BundledRunner, default_model_path
from bridge.sim.episode import run_episode
from bridge.sim.evaluate import _family
from bridge.sim.residual import corrected, fit_residual
from bridge.sim.trials import TrialRunner, load_trial_model
from mappings.actions import ACTIONS, METERS


def _copy_with_meta(tmp_path, name: str, **changes) -> str:
    """The shipped artifact with its meta changed (None removes a key)."""
    with np.load(default_model_path(), allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays.pop("meta")))
    for key, value in changes.items():
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
    path = tmp_path / name
    np.savez_compressed(path, meta=np.array(json.dumps(meta)), **arrays)
    return str(path)


def test_fit_residual_explains_what_the_offset_does_not():
    # action 3 always accepted where the population model expects 12 %, action 5 never
    # where it expects 73 %, action 0 exactly as expected; nothing of the others
    acts = np.array([3] * 8 + [5] * 8 + [0] * 8)
    y = np.array([1.0] * 8 + [0.0] * 8 + [1.0, 0.0] * 4)
    offset = np.array([-2.0] * 8 + [1.0] * 8 + [0.0] * 8)
    slots = np.zeros(len(acts), dtype=int)
    small, needed = fit_residual(acts, slots, y, offset, n_actions=len(ACTIONS), tau=0.5)
    large, _ = fit_residual(acts, slots, y, offset, n_actions=len(ACTIONS), tau=2.0)
    assert small.shape == (4, len(ACTIONS))
    assert large[0, 3] > small[0, 3] > 0.5  # shrunk towards 0 more by a tighter prior
    assert large[0, 5] < small[0, 5] < -0.3
    assert abs(large[0, 0]) < 0.05
    untouched = [a for a in range(len(ACTIONS)) if a not in (0, 3, 5)]
    assert np.all(large[:, untouched] == 0.0)
    assert np.allclose(large, large[0])  # no slot term: every slot gets the action's
    # none at all: zeros whatever the answers
    none, never = fit_residual(acts, slots, y, offset, n_actions=len(ACTIONS), tau=0.0)
    assert np.all(none == 0.0) and never == 0.0
    # a slot term: the correction of action 3 in slot 0 differs from other slots'
    sloted, _ = fit_residual(acts, slots, y, offset, n_actions=len(ACTIONS), tau=0.5, slot_tau=1.0)
    assert sloted[0, 3] > sloted[1, 3] > 0  # the slot with the answers, and the action
    # 16 answers far from what the population model expects: a correction is needed ...
    assert needed > 0.9
    # ... but not for someone who answers as it expects (accepted where it says 88 %,
    # ignored where it says 12 %): then the fitted residual is noise and weighs little
    fits = np.array([2.0, -2.0] * 12)
    ok = np.array([1.0, 0.0] * 12)
    _, fine = fit_residual(acts, slots, ok, fits, n_actions=len(ACTIONS), tau=0.5, slot_tau=0.5)
    assert fine < 0.4  # below the even prior odds
    p = np.array([0.2, 0.5, 0.9])
    assert np.allclose(corrected(p, np.zeros(3)), p)
    assert np.all(corrected(p, np.ones(3)) > p)
    assert np.allclose(corrected(p, np.ones(3), weight=0.0), p)
    half = corrected(p, np.ones(3), weight=0.5)
    assert np.all((half > p) & (half < corrected(p, np.ones(3))))


def test_an_artifact_without_a_residual_loads_with_none(tmp_path):
    old = _copy_with_meta(tmp_path, "old.npz", residual_tau=None, residual_slot_tau=None)
    model = load_trial_model(old)
    assert model.residual_tau == 0.0 and model.residual_slot_tau == 0.0
    runner = TrialRunner(old)
    assert runner.tau == 0.0 and runner.slot_tau == 0.0
    rec = runner.recommend({"slot": 0, **dict.fromkeys(METERS, 0.6)}, [])
    assert rec.action in ACTIONS
    stored = _copy_with_meta(tmp_path, "new.npz", residual_tau=0.7, residual_slot_tau=0.2)
    assert (TrialRunner(stored).tau, TrialRunner(stored).slot_tau) == (0.7, 0.2)
    assert TrialRunner(stored, residual_tau=0.0).tau == 0.0


def test_the_runtime_runner_refuses_an_artifact_that_asks_for_a_trial(tmp_path):
    stored = _copy_with_meta(tmp_path, "asks.npz", residual_tau=0.7)
    with pytest.raises(InputError) as refused:
        BundledRunner(stored)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{stored}: asks for the 'residual' trial")
    assert "only bridge.sim runs" in message and "rhythm-bridge train-model" in message
    both = _copy_with_meta(tmp_path, "both.npz", residual_slot_tau=0.2, fit_check_scales=[1.0])
    with pytest.raises(InputError, match="'fit check' and 'residual' trials"):
        BundledRunner(both)
    # a trial's key at none (as every trained artifact stores the residual's) is no trial
    off = _copy_with_meta(tmp_path, "off.npz", residual_tau=0.0, effect_offset_sds=[])
    assert BundledRunner(off).recommend({"slot": 0, **dict.fromkeys(METERS, 0.6)}, [])


def test_tau_zero_is_the_runner_as_before(tmp_path, monkeypatch):
    old = _copy_with_meta(tmp_path, "old.npz", residual_tau=None, residual_slot_tau=None)
    fam = _family("habits", calendars=False)

    def person():  # a fresh one each time: a habit grows with what it is told
        return fam.person("in", 3, 0)

    before = run_episode(BundledRunner(old), person(), 40)

    def never(*args, **kwargs):
        raise AssertionError("tau = 0 must not fit a correction")

    monkeypatch.setattr(trials, "fit_residual", never)
    stored = _copy_with_meta(tmp_path, "zero.npz", residual_tau=0.0, residual_slot_tau=0.0)
    after = run_episode(TrialRunner(stored), person(), 40)
    assert after.errors == 0 and before.errors == 0
    assert after.actions == before.actions
    assert after.expected == before.expected
    assert after.beliefs == before.beliefs
    # and a correction that is switched on is fitted (the spy above would raise)
    with_one = run_episode(TrialRunner(stored, residual_tau=1.0), person(), 12)
    assert with_one.errors > 0


def _favourite_count(runner: TrialRunner, favourite: str, steps: int) -> int:
    """A person who accepts `favourite` whenever it comes and ignores everything else;
    how often it is recommended in the second half."""
    history: list[dict] = []
    meters = dict.fromkeys(METERS, 0.6)
    late = 0
    for t in range(steps):
        obs = {"slot": t % 4, "day": (t // 4) % 7, **meters}
        action = runner.recommend(obs, history).action
        late += action == favourite and t >= steps // 2
        history.append(
            {
                "day": (t // 4) % 7,
                "slot": t % 4,
                "meters": meters,
                "action": action,
                "response": "accepted" if action == favourite else "ignored",
                "meter_deltas": dict.fromkeys(METERS),
            }
        )
    return late


def test_a_favourite_the_profile_does_not_favour_is_recommended_more_with_a_correction():
    # ADMIN_WORK: the profile's terms barely reach it, so the belief cannot say "this
    # person likes admin" without also saying things about DEEP_WORK it does not know
    plain = _favourite_count(TrialRunner(residual_tau=0.0), "ADMIN_WORK", 48)
    with_one = _favourite_count(TrialRunner(residual_tau=1.0), "ADMIN_WORK", 48)
    assert with_one > plain
    assert with_one >= 12  # at least half of the second half
