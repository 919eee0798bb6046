"""The transfer runner: a population prior read per person from answers and meter changes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bridge.errors import InputError
from bridge.runner import load_runner
from bridge.runner.transfer import TransferModel, TransferRunner, default_model_path
from bridge.sim.prior_people import train_transfer
from mappings.actions import ACTIONS, METERS

OBS = {"timestep": 0, "day": 0, "slot": 2, **dict.fromkeys(METERS, 0.6)}
SOCIAL = ACTIONS.index("SOCIALIZE")


def item(t: int, action: str, response: str | None, **meters: float) -> dict:
    base = {m: 0.6 for m in METERS} | meters
    return {
        "day": (t // 4) % 7,
        "slot": 2,  # the same slot every time: only the answers change
        "meters": base,
        "action": action,
        "response": response,
        "meter_deltas": dict.fromkeys(METERS, 0.0),
    }


def finite(runner: TransferRunner, history: list[dict]) -> bool:
    learner = runner.posterior(history)[0]
    return bool(np.isfinite(learner.mean).all() and np.isfinite(learner.cov).all())


def test_loads_by_name_and_recommends_with_a_belief_and_probabilities():
    runner = load_runner("transfer")
    assert isinstance(runner, TransferRunner)
    rec = runner.recommend(OBS, [])
    assert rec.action in ACTIONS and rec.runner == "transfer"
    assert rec.belief is not None and all(0.0 <= b <= 1.0 for b in rec.belief)
    assert 0.0 < rec.extra["expected_accept"] < 1.0 and len(rec.extra["accept"]) == len(ACTIONS)
    assert "no answers yet" in rec.rationale


def test_shipped_artifact_is_small_and_says_how_it_was_made():
    path = default_model_path()
    assert path.stat().st_size <= 5_000_000
    meta = TransferModel(path).meta
    assert meta["population"] == "bridge.sim.prior_people" and meta["people"] >= 200


def test_posterior_follows_a_person_whose_answers_flip():
    runner = TransferRunner()
    history = [item(t, "SOCIALIZE", "accepted") for t in range(30)]
    high = runner.predict(OBS, history)[0][SOCIAL]
    history += [item(t, "SOCIALIZE", "ignored") for t in range(30, 60)]
    low = runner.predict(OBS, history)[0][SOCIAL]
    fresh = TransferRunner().predict(OBS, [])[0][SOCIAL]
    assert high > fresh > low or (high > 0.8 and low < high - 0.3)
    assert low < 0.5 < high


def test_a_person_who_never_answers_stays_at_the_prior():
    runner = TransferRunner()
    prior = runner.recommend(OBS, [])
    history = [item(t, ACTIONS[t % 10], "expired") for t in range(40)]
    rec = runner.recommend(OBS, history)
    assert runner.answers == 0 and rec.belief == prior.belief and finite(runner, history)


def test_a_late_answer_is_read_when_it_arrives():
    runner = TransferRunner()
    history = [item(0, "SOCIALIZE", None), item(1, "ME_TIME", "ignored")]
    before = runner.predict(OBS, history)[0][SOCIAL]
    assert runner.answers == 1
    history[0]["response"] = "accepted"
    after = runner.predict(OBS, history)[0][SOCIAL]
    assert runner.answers == 2 and after > before
    # asking again, or a fresh runner asking, gives the same
    assert runner.predict(OBS, history)[0][SOCIAL] == after
    assert TransferRunner().predict(OBS, history)[0][SOCIAL] == after


def test_meter_changes_move_the_belief():
    """An extrovert's SOCIALIZE lifts Vitality; the same yes with a drop reads as introvert."""
    up, down = [], []
    for t in range(12):
        for out, change in ((up, 0.08), (down, -0.12)):
            h = item(t, "SOCIALIZE", "accepted")
            h["meter_deltas"] = {**h["meter_deltas"], "vitality": change, "serenity": change / 2}
            out.append(h)
    social_up = TransferRunner().recommend(OBS, up).belief[0]
    social_down = TransferRunner().recommend(OBS, down).belief[0]
    assert social_up > social_down + 0.1


def test_nan_free_when_nothing_fits():
    runner = TransferRunner()
    # Extreme and constant: every meter at 0 or 1, absurd and missing meter changes, the
    # same action accepted 300 times, then refused 300 times.
    history = []
    for t in range(600):
        h = item(t, "DEEP_WORK", "accepted" if t < 300 else "ignored", vitality=0.0, progress=1.0)
        h["meter_deltas"] = {"vitality": 1e6, "cognition": float("nan"), "progress": None}
        h["meters"]["serenity"] = None
        history.append(h)
    obs = {**OBS, "vitality": 0.0, "cognition": None, "progress": 1.0, "serenity": float("nan")}
    rec = runner.recommend(obs, history)
    assert finite(runner, history)
    assert all(math.isfinite(b) for b in rec.belief or [])
    assert all(0.0 < p < 1.0 for p in rec.extra["accept"].values())


def test_training_is_reproducible_per_seed_and_small(tmp_path):
    a = train_transfer(tmp_path / "a.npz", seed=3, n_people=6, slots=40)
    b = train_transfer(tmp_path / "b.npz", seed=3, n_people=6, slots=40)
    c = train_transfer(tmp_path / "c.npz", seed=4, n_people=6, slots=40)
    ma, mb, mc = (TransferModel(r.path) for r in (a, b, c))
    assert np.array_equal(ma.alpha, mb.alpha) and np.array_equal(ma.delta, mb.delta)
    assert not np.array_equal(ma.alpha, mc.alpha)
    assert a.size_bytes <= 5_000_000 and a.samples == 240
    rec = TransferRunner(str(a.path)).recommend(OBS, [item(0, "LEARN", "accepted")])
    assert rec.action in ACTIONS


def test_a_broken_artifact_is_one_clear_error(tmp_path):
    bad = tmp_path / "bad.npz"
    np.savez(bad, alpha=np.zeros(3))
    with pytest.raises(InputError, match="not a transfer model"):
        TransferModel(bad)


def test_probing_values_what_an_accepted_actions_meter_change_would_say():
    """Early on, among actions equally likely to be accepted and equally uncertain, the
    one whose meter change would say most about the profile is recommended first."""
    from bridge.runner.transfer import N_LATENT

    m = TransferModel(default_model_path())
    m.alpha[:] = 0.0
    m.beta[:] = 0.0
    m.gamma[:] = 0.0
    m.prior_mean[:] = 0.0
    m.prior_cov = np.eye(N_LATENT) * 0.5
    m.delta[:] = 0.0
    m.delta[SOCIAL, METERS.index("vitality"), 0, :] = 1.0  # its vitality change reads S
    rec = TransferRunner(m).recommend(OBS, [])
    assert rec.action == "SOCIALIZE"
    assert len(set(rec.extra["accept"].values())) == 1  # no other reason to pick it
