"""Runners that only make sense in simulation: the oracle and the learners without a prior.

- `OracleRunner` knows the person (profile and current state): the ceiling on acceptance.
- `BanditRunner` ("no-prior"): a Beta-Bernoulli Thompson sampler per (slot, action), the
  weak no-prior learner `eval` has always reported.
- `LinearTSRunner` ("linear-ts"): the strong no-prior learner, a contextual Thompson
  sampler (Bayesian linear regression of accept/ignore on the same context the bundled
  model reads: slot, meters, calendar), learning from this one person's answers only.
  Its hyper-parameters were tuned on training families only (`tune_linear_ts`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from bridge.runner.base import Recommendation, available_actions
from bridge.runner.bundled import GUARD, SAFE
from bridge.runner.features import LOW, booked, meters_of
from bridge.sim.calendar import SlotCalendar
from bridge.sim.family import SimPerson
from bridge.sim.world import N_ACTIONS
from mappings.actions import ACTIONS


class OracleRunner:
    """Knows the person's hidden profile and state: the ceiling on acceptance.

    It reads the family's `accept_probabilities` for the slot the episode tells it
    (`see_slot`) and recommends the most likely accepted action; where the family says how
    an action moves the meters (`expected_delta`, the rhythm family) it keeps the bundled
    runner's health rule (nothing expected to leave a meter below SAFE).
    """

    name = "oracle"
    version = "2"

    def __init__(self, person: Any = None) -> None:
        self.sim: SimPerson | None = None
        self.t = 0
        self.cal: SlotCalendar | None = None
        if person is not None:
            from bridge.sim.episode import as_sim_person

            self.sim = as_sim_person(person)

    def see_slot(self, sim: SimPerson, t: int, cal: SlotCalendar | None) -> None:
        self.sim, self.t, self.cal = sim, t, cal

    def recommend(
        self, observation: dict[str, Any], history: list[dict[str, Any]]
    ) -> Recommendation:
        if self.sim is None:
            raise RuntimeError("the oracle needs the person (see_slot) before recommending")
        meters = meters_of(observation)
        fits = np.array([a in available_actions(observation) for a in ACTIONS])
        p = self.sim.accept_probabilities(self.t, meters, self.cal)
        score = p.copy()
        delta = getattr(self.sim, "expected_delta", None)
        if delta is not None:
            after = meters + np.array([delta(self.t, a) for a in range(N_ACTIONS)])
            score -= GUARD * np.maximum(0.0, SAFE - after).sum(1)  # the bundled health rule
        a = int(np.argmax(np.where(fits, score, -np.inf)))
        return Recommendation(
            ACTIONS[a],
            [float(x) for x in self.sim.profile(self.t)],
            "knows the profile",
            self.name,
            self.version,
            extra={"expected_accept": float(p[a])},
        )


class BanditRunner:
    """The weak no-prior learner: a per-person Thompson-sampling bandit over (slot, action).

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


@dataclass(frozen=True)
class LinearTSParams:
    """Prior sd of each block of weights, the answer noise and the exploration scale."""

    action_sd: float = 0.3  # per-action intercept, around `prior_mean`
    slot_sd: float = 0.5  # per action and slot, around the action's intercept
    meter_sd: float = 0.5  # per action, slope on how far the lowest meter is below LOW
    calendar_sd: float = 0.3  # shared: how booked the slot is, the action is scheduled
    noise_sd: float = 0.4  # of a 0/1 answer around its probability
    explore: float = 0.5  # posterior sd multiplier when sampling
    prior_mean: float = 0.4  # the accept rate assumed before any answer


# Tuned on the training families only (train split, `tune_linear_ts`), see README.
DEFAULT_TS = LinearTSParams()

# Per action: intercept, slot (4), how far the lowest meter is below LOW; shared calendar terms.
_PER = 1 + 4 + 1
N_TS_FEATURES = N_ACTIONS * _PER + 2


def ts_features(
    action: int, slot: int, meters: np.ndarray, busy: float, scheduled: bool
) -> np.ndarray:
    """One-hot action, action × slot, action × lowest meter's lowness, calendar terms."""
    x = np.zeros(N_TS_FEATURES)
    base = action * _PER
    x[base] = 1.0
    x[base + 1 + slot % 4] = 1.0
    x[base + 5] = max(0.0, LOW - float(meters.min()))
    x[-2] = busy
    x[-1] = 1.0 if scheduled else 0.0
    return x


def _prior(params: LinearTSParams) -> tuple[np.ndarray, np.ndarray]:
    sd = np.zeros(N_TS_FEATURES)
    mean = np.zeros(N_TS_FEATURES)
    for a in range(N_ACTIONS):
        sd[a * _PER] = params.action_sd
        mean[a * _PER] = params.prior_mean
        sd[a * _PER + 1 : a * _PER + 5] = params.slot_sd
        sd[a * _PER + 5] = params.meter_sd
    sd[-2:] = params.calendar_sd
    return mean, sd


class LinearTSRunner:
    """The strong no-prior learner: contextual Thompson sampling, one person at a time.

    P(accept) is modelled as linear in the features above, with a Gaussian prior that is
    the same for every person (no population prior over profiles: it knows nothing of
    what kinds of people exist). Each answered recommendation updates the posterior; each
    slot it samples weights from it and recommends the best sampled action that fits.
    """

    name = "linear-ts"
    version = "1"

    def __init__(self, seed: int = 0, params: LinearTSParams = DEFAULT_TS) -> None:
        self._rng = np.random.default_rng([seed, 23])
        self.params = params
        self._mean0, sd0 = _prior(params)
        self._prec0 = np.diag(1.0 / sd0**2)
        self._rows: dict[tuple[int, str, int], np.ndarray] = {}

    def _row(self, index: int, item: dict[str, Any]) -> np.ndarray:
        # An episode's history only grows, so an item's features are computed once.
        key = (index, item["action"], item["slot"])
        row = self._rows.get(key)
        if row is None:
            sched = (
                item.get("active_event") is not None and item.get("active_event") == item["action"]
            )
            row = ts_features(
                ACTIONS.index(item["action"]),
                int(item["slot"]),
                meters_of(item.get("meters") or {}),
                booked(item.get("free_minutes")),
                sched,
            )
            self._rows[key] = row
        return row

    def recommend(
        self, observation: dict[str, Any], history: list[dict[str, Any]]
    ) -> Recommendation:
        rows, ys = [], []
        for i, item in enumerate(history):
            if item.get("response") not in ("accepted", "ignored", "rescheduled"):
                continue
            rows.append(self._row(i, item))
            ys.append(1.0 if item["response"] == "accepted" else 0.0)
        noise = self.params.noise_sd**2
        prec = self._prec0.copy()
        rhs = self._prec0 @ self._mean0
        if rows:
            X, y = np.array(rows), np.array(ys)
            prec += X.T @ X / noise
            rhs += X.T @ y / noise
        chol = np.linalg.cholesky(prec)
        mean = np.linalg.solve(prec, rhs)
        # A draw from N(mean, explore² · prec⁻¹): solve Lᵀ z = ε.
        eps = self._rng.standard_normal(N_TS_FEATURES)
        w = mean + self.params.explore * np.linalg.solve(chol.T, eps)
        slot = int(observation.get("slot", 0)) % 4
        meters = meters_of(observation)
        busy = booked(observation.get("free_minutes"))
        scheduled = observation.get("active_event")
        X_now = np.array(
            [ts_features(a, slot, meters, busy, ACTIONS[a] == scheduled) for a in range(N_ACTIONS)]
        )
        fits = np.array([a in available_actions(observation) for a in ACTIONS])
        a = int(np.argmax(np.where(fits, X_now @ w, -np.inf)))
        expected = float(np.clip(X_now[a] @ mean, 0.0, 1.0))
        return Recommendation(
            ACTIONS[a],
            None,
            "contextual Thompson sample",
            self.name,
            self.version,
            extra={"expected_accept": expected},
        )


TS_GRID: dict[str, tuple[float, ...]] = {
    "explore": (0.25, 0.5, 1.0),
    "slot_sd": (0.25, 0.5, 0.8),
    "meter_sd": (0.1, 0.5, 1.5),
    "action_sd": (0.15, 0.3, 0.5),
    "noise_sd": (0.3, 0.4, 0.6),
}


def tune_linear_ts(
    families: Iterable[str],
    n_people: int = 20,
    slots: int = 56,
    seed: int = 0,
    grid: dict[str, tuple[float, ...]] = TS_GRID,
) -> tuple[LinearTSParams, list[dict[str, Any]]]:
    """Coordinate search over `grid` on the *train* split of `families` (never the held-out).

    The objective is the mean acceptance over the first `slots` interactions (a learner
    that explores too long or too little both lose there). Returns the best parameters and
    every trial.
    """
    from dataclasses import replace

    from bridge.sim.episode import run_episode
    from bridge.sim.families import family

    fams = [family(f) for f in families]

    def score(params: LinearTSParams) -> float:
        acc = []
        for f in fams:
            for i in range(n_people):  # a fresh person each time: families keep state
                person = f.person("train", i, seed)
                ep = run_episode(LinearTSRunner(seed=i, params=params), person, slots)
                acc.append(np.mean(ep.accepted))
        return float(np.mean(acc))

    best = DEFAULT_TS
    best_score = score(best)
    trials = [{"params": best.__dict__.copy(), "acceptance": best_score}]
    for name, values in grid.items():
        for v in values:
            cand = replace(best, **{name: v})
            if cand == best:
                continue
            s = score(cand)
            trials.append({"params": cand.__dict__.copy(), "acceptance": s})
            if s > best_score:
                best, best_score = cand, s
    return best, trials
