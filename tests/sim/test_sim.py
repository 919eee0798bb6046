import numpy as np
import pytest

from bridge.sim import world
from bridge.sim.episode import run_episode
from bridge.sim.population import PROFILE_RANGE, people, person
from bridge.sim.world import A, C, P, Person, V, accept_probability, expected_delta


def someone(**kw) -> Person:
    base = dict(
        social=0.5,
        morning=0.5,
        work=0.5,
        answer_noise=0.05,
        stress_tolerance=0.75,
        recovery=1.0,
        seed=1,
    )
    return Person(**{**base, **kw})


def test_profile_modifiers_follow_rhythmenv():
    introvert, extrovert = someone(social=0.1), someone(social=0.9)
    assert (
        expected_delta(introvert, A["SOCIALIZE"], 2)[V]
        < 0
        < expected_delta(extrovert, A["SOCIALIZE"], 2)[V]
    )
    lark, owl = someone(morning=0.9), someone(morning=0.1)
    assert expected_delta(lark, A["DEEP_WORK"], 0)[P] > expected_delta(owl, A["DEEP_WORK"], 0)[P]
    assert expected_delta(lark, A["DEEP_WORK"], 0)[C] > expected_delta(owl, A["DEEP_WORK"], 0)[C]
    assert expected_delta(owl, A["DEEP_WORK"], 2)[P] > expected_delta(lark, A["DEEP_WORK"], 2)[P]
    workaholic, slacker = someone(work=0.9), someone(work=0.1)
    assert (
        expected_delta(workaholic, A["DEEP_WORK"], 1)[V]
        > 0
        > expected_delta(slacker, A["DEEP_WORK"], 1)[V]
    )
    slow = someone(recovery=0.6)
    assert expected_delta(slow, A["SLEEP"], 3)[V] < expected_delta(someone(), A["SLEEP"], 3)[V]


def test_acceptance_depends_on_profile_slot_meters_and_noise():
    m = np.full(5, 0.6)
    assert accept_probability(someone(social=0.9), 2, m)[A["SOCIALIZE"]] > 0.8
    assert accept_probability(someone(social=0.1), 2, m)[A["SOCIALIZE"]] < 0.3
    assert (
        accept_probability(someone(), 3, m)[A["SLEEP"]]
        > accept_probability(someone(), 0, m)[A["SLEEP"]]
    )
    tired = m.copy()
    tired[V] = 0.05
    assert (
        accept_probability(someone(), 1, tired)[A["DEEP_WORK"]]
        < accept_probability(someone(), 1, m)[A["DEEP_WORK"]]
    )
    # answer noise caps acceptance: some ignores have no reason at all
    assert accept_probability(someone(answer_noise=0.2), 3, m).max() <= 0.8


def test_splits_are_seeded_disjoint_and_ood_is_outside():
    assert person("in", 3) == person("in", 3) != person("train", 3)
    assert {p.seed for p in people("train", 50)}.isdisjoint(p.seed for p in people("in", 50))
    lo, hi = PROFILE_RANGE
    for p in people("in", 50):
        assert all(lo <= x <= hi for x in p.belief) and p.answer_noise <= 0.12
    ood = people("ood", 50)
    assert all(any(x < lo or x > hi for x in p.belief) for p in ood)
    assert min(p.answer_noise for p in ood) >= 0.12
    with pytest.raises(ValueError, match="unknown split"):
        person("test", 0)


class Always:
    name, version = "always", "1"

    def __init__(self, action):
        self.action = action

    def recommend(self, observation, history):
        from bridge.runner.base import Recommendation

        assert set(observation) >= {"timestep", "day", "slot", "vitality", "connection"}
        return Recommendation(self.action, None, "", self.name)


def test_episode_is_reproducible_and_history_has_the_runner_shape():
    p = people("in", 1)[0]
    a, b = run_episode(Always("DEEP_WORK"), p, 20), run_episode(Always("DEEP_WORK"), p, 20)
    assert a.accepted == b.accepted and a.meters == b.meters and len(a.accepted) == 20
    assert all(0.0 <= x <= 1.0 for row in a.meters for x in row)


def test_a_runner_that_raises_is_counted_not_fatal():
    class Broken:
        def recommend(self, observation, history):
            raise RuntimeError("boom")

    ep = run_episode(Broken(), people("in", 1)[0], 5)
    assert ep.errors == 6 and ep.actions == ["ME_TIME"] * 5  # 5 slots + the final belief


def test_world_constants_are_consistent():
    assert world.BASE.shape == (10, 5) and world.TIME_MULT.shape == (10, 4)
