import pytest

from bridge.runner import load_runner
from bridge.runner.base import Recommendation
from mappings.actions import ACTIONS

OBS = {
    "timestep": 12,
    "day": 3,
    "slot": 0,
    "vitality": 0.7,
    "cognition": 0.6,
    "progress": 0.2,
    "serenity": 0.5,
    "connection": 0.8,
}


def test_heuristic_restores_the_lowest_meter():
    rec = load_runner("heuristic").recommend(OBS, [])
    assert rec.action == "DEEP_WORK" and "progress" in rec.rationale and rec.belief is None


@pytest.mark.parametrize(("slot", "action"), [(0, "SOCIALIZE"), (2, "FAMILY_TIME"), (3, "SLEEP")])
def test_heuristic_picks_by_slot(slot, action):
    obs = {**OBS, "slot": slot, "connection": 0.1}
    assert load_runner("heuristic").recommend(obs, []).action == action


def test_heuristic_rests_instead_of_exercising_near_a_crash():
    obs = {**OBS, "vitality": 0.05}
    assert load_runner("heuristic").recommend(obs, []).action == "ME_TIME"


def test_heuristic_ignores_null_meters_and_copes_with_none_at_all():
    obs = {**OBS, "progress": None}
    assert load_runner("heuristic").recommend(obs, []).action != "DEEP_WORK"
    empty = {k: None for k in ("vitality", "cognition", "progress", "serenity", "connection")}
    rec = load_runner("heuristic").recommend({**OBS, **empty}, [])
    assert rec.action in ACTIONS and "no meter" in rec.rationale


def test_random_runner_is_seeded():
    a = [load_runner("random", seed=3).recommend(OBS, []).action for _ in range(3)]
    b = [load_runner("random", seed=3).recommend(OBS, []).action for _ in range(3)]
    assert a == b and all(x in ACTIONS for x in a)


def test_unknown_runner_and_unknown_action():
    with pytest.raises(ValueError, match="unknown runner 'gpt'"):
        load_runner("gpt")
    with pytest.raises(ValueError, match="unknown action"):
        Recommendation("NAP", None, "", "x")
