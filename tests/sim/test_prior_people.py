"""The randomized population the transfer runner's prior is fitted on."""

from __future__ import annotations

import numpy as np

from bridge.sim.prior_people import PriorPerson, dataset, episode
from mappings.actions import ACTIONS


def test_the_same_seed_is_the_same_person_and_month():
    a, ta = episode(PriorPerson(7), 40)
    b, tb = episode(PriorPerson(7), 40)
    c, _ = episode(PriorPerson(8), 40)
    assert a == b and np.array_equal(ta, tb)
    assert a != c


def test_people_differ_broadly_and_some_drift():
    people = [PriorPerson(i) for i in range(60)]
    profiles = np.array([p.profile0 for p in people])
    assert profiles.min() < 0.1 and profiles.max() > 0.9
    lapses = [p.lapse for p in people]
    assert max(lapses) - min(lapses) > 0.2
    moved = 0
    for p in people[:20]:
        _, truths = episode(p, 112)
        moved += bool(np.abs(truths[-1] - truths[0]).max() > 0.05)
    assert 3 <= moved <= 18  # about two in three drift, in a walk or a step


def test_the_data_has_every_action_both_answers_and_finite_features():
    data = dataset(4, seed=1, slots=56)
    assert set(data["a"]) == set(range(len(ACTIONS)))
    assert 0.1 < data["y"].mean() < 0.9
    assert np.isfinite(data["x"]).all() and data["x"].shape == (4 * 56, data["x"].shape[1])


def test_the_transfer_runner_lives_a_month_with_one_of_them():
    from bridge.runner import load_runner
    from bridge.sim.episode import run_episode
    from bridge.sim.prior_people import PriorSimPerson

    ep = run_episode(load_runner("transfer"), PriorSimPerson(3), 56)
    assert ep.errors == 0 and len(ep.actions) == 56
    assert all(b is not None and all(0 <= x <= 1 for x in b) for b in ep.beliefs)
    again = run_episode(load_runner("transfer"), PriorSimPerson(3), 56)
    assert again.actions == ep.actions  # the same person, the same luck
