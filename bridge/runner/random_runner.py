"""A uniformly random runner: the floor every other runner must beat."""

from __future__ import annotations

import random
from typing import Any

from bridge.runner.base import Recommendation, available_actions
from mappings.actions import ACTIONS


class RandomRunner:
    name = "random"
    version = "1"

    def __init__(self, seed: int | None = None) -> None:
        self._rng = random.Random(seed)

    def recommend(
        self, observation: dict[str, Any], history: list[dict[str, Any]]
    ) -> Recommendation:
        return Recommendation(
            self._rng.choice(available_actions(observation) or ACTIONS),
            None,
            "random choice",
            self.name,
            self.version,
        )
