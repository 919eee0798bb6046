"""Runners that only make sense in simulation: the oracle and the no-prior learner."""

from __future__ import annotations

from typing import Any

import numpy as np

from bridge.runner.base import Recommendation, available_actions
from bridge.runner.bundled import GUARD, SAFE
from bridge.runner.features import booked
from bridge.sim.world import N_ACTIONS, Person, accept_probability, expected_delta
from mappings.actions import ACTIONS, METERS


def _meters(observation: dict[str, Any]) -> np.ndarray:
    return np.array([0.5 if observation.get(m) is None else observation[m] for m in METERS])


class OracleRunner:
    """Knows the person's hidden profile: the ceiling on acceptance."""

    name = "oracle"
    version = "1"

    def __init__(self, person: Person) -> None:
        self.person = person

    def recommend(
        self, observation: dict[str, Any], history: list[dict[str, Any]]
    ) -> Recommendation:
        slot, meters = int(observation["slot"]), _meters(observation)
        fits = np.array([a in available_actions(observation) for a in ACTIONS])
        scheduled = observation.get("active_event")
        p = accept_probability(
            self.person,
            slot,
            meters,
            booked(observation.get("free_minutes")),
            ACTIONS.index(scheduled) if scheduled in ACTIONS else None,
        )
        after = meters + np.array([expected_delta(self.person, a, slot) for a in range(N_ACTIONS)])
        shortfall = np.maximum(0.0, SAFE - after).sum(1)  # the bundled runner's health rule
        a = int(np.argmax(np.where(fits, p - GUARD * shortfall, -np.inf)))
        return Recommendation(
            ACTIONS[a], self.person.belief.tolist(), "knows the profile", self.name, self.version
        )


class BanditRunner:
    """The no-prior learner: a per-person Thompson-sampling bandit over (slot, action).

    It starts from nothing for every person and learns only from that person's answers.
    """

    name = "no-prior"
    version = "1"

    def __init__(self, seed: int = 0) -> None:
        self._rng = np.random.default_rng(seed)

    def recommend(
        self, observation: dict[str, Any], history: list[dict[str, Any]]
    ) -> Recommendation:
        slot = int(observation["slot"]) % 4
        wins, losses = np.ones(N_ACTIONS), np.ones(N_ACTIONS)
        for item in history:
            if item["slot"] % 4 != slot or item.get("response") not in ("accepted", "ignored"):
                continue
            a = ACTIONS.index(item["action"])
            if item["response"] == "accepted":
                wins[a] += 1
            else:
                losses[a] += 1
        fits = np.array([a in available_actions(observation) for a in ACTIONS])
        a = int(np.argmax(np.where(fits, self._rng.beta(wins, losses), -1.0)))
        return Recommendation(ACTIONS[a], None, "Thompson sample", self.name, self.version)
