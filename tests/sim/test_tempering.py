"""Issue 22: the meter-evidence weight is chosen without the families it is judged on,
stored in the artifact and used by the runner; a per-person acceptance offset is
integrated out so a yes-sayer is not read as a profile."""

import json

import numpy as np

import bridge.sim.evaluate as evaluate
from bridge.runner.bundled import OFFSETS, BundledRunner, load_model
from bridge.sim.tempering import DELTA_WEIGHTS
from bridge.sim.train import train
from mappings.actions import ACTIONS, METERS


def test_weight_is_chosen_on_left_out_training_families_only(tmp_path, monkeypatch):
    seen: list[str] = []
    real = evaluate._family

    def spy(name, calendars):
        seen.append(name)
        return real(name, calendars)

    monkeypatch.setattr(evaluate, "_family", spy)
    path = tmp_path / "m.npz"
    rep = train(
        path, seed=3, n_people=24, slots=56, families=("rhythm", "fatigue"), temper_people=3
    )
    # every trial scored people of the two training families, never another family
    assert set(seen) == {"rhythm", "fatigue"}
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
    assert meta == rep.meta
    assert meta["delta_weight"] in DELTA_WEIGHTS
    trials = meta["delta_weight_trials"]
    assert trials["left_out_families"] is True
    # two families: each inner model has one expert, so only the weight is tried
    assert set(trials["mae_28"]) == {str(w) for w in DELTA_WEIGHTS}
    assert meta["expert_temper"] == 1.0
    assert trials["mae_28"][str(meta["delta_weight"])] == min(trials["mae_28"].values())
    # the runner uses the stored weight unless told otherwise
    assert load_model(str(path)).delta_weight == meta["delta_weight"]
    assert BundledRunner(str(path)).delta_weight == meta["delta_weight"]
    assert BundledRunner(str(path), delta_weight=0.9).delta_weight == 0.9


def test_a_model_without_a_stored_weight_keeps_the_old_one(tmp_path):
    path = tmp_path / "old.npz"
    train(path, seed=1, n_people=12, slots=28, families=("rhythm",), temper_people=0)
    assert load_model(str(path)).delta_weight == 0.5


def _answers(response: str, n: int) -> list[dict]:
    meters = dict.fromkeys(METERS, 0.6)
    return [
        {
            "day": i // 4,
            "slot": i % 4,
            "meters": meters,
            "action": ACTIONS[i % len(ACTIONS)],
            "response": response,
            "meter_deltas": dict.fromkeys(METERS),
        }
        for i in range(n)
    ]


def test_a_yes_sayer_is_explained_by_the_offset_not_only_by_the_profile():
    with_offset, without = BundledRunner(), BundledRunner(offsets=(0.0,))
    history = _answers("accepted", 40)
    joint = with_offset.joint_posterior(history)
    assert joint.shape == (len(with_offset.model.grid), len(OFFSETS))
    assert np.isclose(joint.sum(), 1.0)
    offset_mass = joint.sum(0)
    # saying yes to everything is evidence for a positive offset ...
    assert offset_mass[np.array(OFFSETS) > 0].sum() > 0.6
    # ... so the profile belief moves less away from where it started than without one
    start = with_offset.posterior([]) @ with_offset.model.grid
    moved_with = np.abs(with_offset.posterior(history) @ with_offset.model.grid - start).sum()
    moved_without = np.abs(without.posterior(history) @ without.model.grid - start).sum()
    assert moved_with < moved_without
    # the no-answers prior over offsets is centred: no one is assumed a yes-sayer
    prior = with_offset.joint_posterior([]).sum(0)
    assert np.allclose(prior, prior[::-1])


def test_a_correction_is_kept_only_when_it_beats_none_by_the_margin(monkeypatch):
    import bridge.sim.tempering as tempering

    gains: dict[tuple[float, float], float] = {}

    def fake(model, weight, families, *, people, seed, temper=1.0, residual=(0.0, 0.0)):
        return 0.1, 0.5 + gains.get(residual, 0.0)

    monkeypatch.setattr(tempering, "episode_scores", fake)
    candidates = (tempering.NO_RESIDUAL, (0.5, 0.0), (1.0, 0.5))
    inner = [("a.npz", "rhythm"), ("b.npz", "fatigue")]

    def choose() -> tuple[float, float]:
        trials: dict[str, float] = {}
        return tempering._choose_residual(
            "m.npz",
            inner,
            ("rhythm", "fatigue"),
            (0.2, 1.0),
            panel=(4, 0),
            residuals=candidates,
            trials=trials,
        )

    gains[(1.0, 0.5)] = tempering.RESIDUAL_MARGIN / 2  # ahead, but within the margin
    assert choose() == tempering.NO_RESIDUAL
    gains[(1.0, 0.5)] = 2 * tempering.RESIDUAL_MARGIN
    assert choose() == (1.0, 0.5)
    # a single candidate is taken as is, without scoring anyone
    trials: dict[str, float] = {}
    only = tempering._choose_residual(
        "m.npz",
        inner,
        ("rhythm",),
        (0.2, 1.0),
        panel=(4, 0),
        residuals=((0.5, 0.5),),
        trials=trials,
    )
    assert only == (0.5, 0.5) and trials == {}
