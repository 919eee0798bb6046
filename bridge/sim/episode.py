"""One simulated person living 4 weeks (112 slots) with a runner recommending each slot."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bridge.sim.world import CRASH, Person, accept_probability, initial_meters, step
from mappings.actions import ACTIONS, METERS

SLOTS_PER_EPISODE = 112


@dataclass
class Episode:
    person: Person
    actions: list[str] = field(default_factory=list)
    accepted: list[bool] = field(default_factory=list)
    beliefs: list[list[float] | None] = field(default_factory=list)
    crashed: list[bool] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    meters: list[list[float]] = field(default_factory=list)
    errors: int = 0
    final_belief: list[float] | None = None
    start: list[float] = field(default_factory=list)

    def history(self) -> list[dict[str, Any]]:
        """The episode as the runner-shaped interaction history it produced."""
        meters = [np.array(self.start), *map(np.array, self.meters)]
        return [
            history_item(t, meters[t], a, ok, meters[t + 1])
            for t, (a, ok) in enumerate(zip(self.actions, self.accepted, strict=True))
        ]


def observation(t: int, meters: np.ndarray) -> dict[str, Any]:
    """The runner's observation at slot t, in the shape the pipeline builds."""
    obs: dict[str, Any] = {
        "timestep": t % 28,
        "day": (t // 4) % 7,
        "slot": t % 4,
        "remaining_steps": 27 - t % 28,
    }
    obs.update({m: round(float(x), 4) for m, x in zip(METERS, meters, strict=True)})
    return obs


def history_item(
    t: int, meters: np.ndarray, action: str, accepted: bool, after: np.ndarray
) -> dict[str, Any]:
    return {
        "day": (t // 4) % 7,
        "slot": t % 4,
        "meters": {m: round(float(x), 4) for m, x in zip(METERS, meters, strict=True)},
        "action": action,
        "response": "accepted" if accepted else "ignored",
        "meter_deltas": {
            m: round(float(b - a), 4) for m, a, b in zip(METERS, meters, after, strict=True)
        },
    }


def run_episode(
    runner: Any, person: Person, slots: int = SLOTS_PER_EPISODE, *, fallback: str = "ME_TIME"
) -> Episode:
    """Let `runner` recommend every slot; the person answers and the meters move.

    The person's random draws depend only on the person, so every runner meets the same
    luck (common random numbers). A runner that raises counts as an error and the slot
    gets `fallback`, so one bad answer does not end the episode.
    """
    answers = np.random.default_rng([person.seed, 1])
    noise = np.random.default_rng([person.seed, 2])
    meters = initial_meters(np.random.default_rng([person.seed, 0]))
    history: list[dict[str, Any]] = []
    ep = Episode(person, start=meters.tolist())
    for t in range(slots):
        obs = observation(t, meters)
        started = time.perf_counter()
        try:
            rec = runner.recommend(obs, history)
            action, belief = rec.action, rec.belief
        except Exception:
            ep.errors += 1
            action, belief = fallback, None
        ep.latencies.append(time.perf_counter() - started)
        a = ACTIONS.index(action)
        accepted = bool(answers.random() < accept_probability(person, t % 4, meters)[a])
        after = step(person, meters, t % 4, a, accepted, noise)
        history.append(history_item(t, meters, action, accepted, after))
        ep.actions.append(action)
        ep.accepted.append(accepted)
        ep.beliefs.append(list(belief) if belief is not None else None)
        ep.crashed.append(bool((after < CRASH).any()))
        ep.meters.append(after.tolist())
        meters = after
    try:  # the belief after the last answer, for "MAE after 112 interactions"
        last = runner.recommend(observation(slots, meters), history).belief
        ep.final_belief = list(last) if last is not None else None
    except Exception:
        ep.errors += 1
    return ep
