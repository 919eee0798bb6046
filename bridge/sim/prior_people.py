"""A procedurally randomized population of simulated people: the transfer runner's prior.

Not one of the hand-written families (bridge.sim.families): every person draws their own
utility structure, answer noise, fatigue and habits, calendar and drift from broad ranges,
so the prior fitted on them (bridge.runner.transfer) has seen many kinds of people rather
than four. What is fixed is only what [S, M, W] means (bridge.sim.family): the direction in
which each axis acts, never its size, form or the actions beside it.

A person:
- utility of action a in slot t: a personal base per action and slot (a loose daily
  pattern: work by day, sleep at night, company in the evening, each shifted by a person's
  own N(0, 0.6)), the axes with random sizes (S on socializing, family time, me time and
  meditation; W on deep work, admin, learning and binge-watching; M through how well focus
  fits the slot, its peak slot and spread random), needs read from the meters (tired,
  lonely, behind, tense) with random weights, fatigue from effortful actions (random build
  and decay), recommendation fatigue from repeats, a booked calendar slot (random share of
  busy slots, random penalty; what the calendar holds is welcome), and a per-person bias
  per action;
- answers: (1 - lapse) * sigmoid(scale * utility), lapse in [0, 0.3], scale in [0.5, 1.8];
- meters: a base table of effects (written here, not any family's), each entry scaled per
  person, the axes' effects with random sizes, homeostasis toward a personal set point for
  half of them, noise Gaussian or heavy-tailed, sd 0.01-0.04; an ignored recommendation
  leaves the slot to a personal habit per slot;
- drift: a third keep their profile, a third walk slowly (sd up to 0.03 a day per axis),
  a third change one axis in one step on a random day.
The data are drawn with uniformly random recommendations, so every action is seen in every
state; the prior is a model of answers and meter changes given the true profile.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bridge.runner.features import delta_context
from bridge.runner.transfer import FORGET, N_LATENT, N_PROFILE, N_X, columns, history_features
from mappings.actions import ACTIONS, METERS

MODEL_VERSION = 1
A = {name: i for i, name in enumerate(ACTIONS)}
N_A, N_M = len(ACTIONS), len(METERS)
V, C, P, SE, CO = range(5)
EFFORT = [A[n] for n in ("DEEP_WORK", "ADMIN_WORK", "LEARN", "EXERCISE", "SOCIALIZE")]
FOCUS = [A[n] for n in ("DEEP_WORK", "LEARN", "EXERCISE")]
WORKISH = [A[n] for n in ("DEEP_WORK", "ADMIN_WORK", "LEARN")]
REST = [A[n] for n in ("SLEEP", "ME_TIME", "MEDITATE")]
# A rough effect per action on (vitality, cognition, progress, serenity, connection).
EFFECT = np.array(
    [
        [-0.05, -0.07, 0.10, -0.04, -0.01],
        [-0.02, -0.03, 0.05, -0.02, 0.00],
        [-0.02, -0.04, 0.05, 0.00, 0.00],
        [0.05, 0.03, 0.00, 0.05, 0.00],
        [0.01, 0.05, 0.00, 0.08, 0.00],
        [0.00, 0.01, 0.00, 0.04, 0.08],
        [-0.02, -0.01, 0.00, 0.01, 0.12],
        [0.03, 0.04, 0.00, 0.05, -0.02],
        [0.12, 0.12, 0.00, 0.03, 0.00],
        [0.01, -0.02, -0.02, 0.02, -0.02],
    ]
)
SLOT_PATTERN = np.zeros((N_A, 4))  # morning, afternoon, evening, night
for _n, _row in {
    "DEEP_WORK": (0.5, 0.4, -0.5, -2.5),
    "ADMIN_WORK": (0.3, 0.5, -0.4, -2.5),
    "LEARN": (0.2, 0.2, 0.0, -2.0),
    "EXERCISE": (0.2, 0.2, 0.0, -2.0),
    "MEDITATE": (-0.3, -0.5, 0.0, -0.5),
    "FAMILY_TIME": (-1.0, -0.5, 1.0, -1.0),
    "SOCIALIZE": (-1.5, -0.3, 0.8, -1.5),
    "ME_TIME": (-0.5, -0.3, 0.4, 0.0),
    "SLEEP": (-2.5, -2.5, -1.5, 3.5),
    "BINGE_WATCH": (-1.5, -1.0, 0.6, -0.5),
}.items():
    SLOT_PATTERN[A[_n]] = _row


@dataclass
class PriorPerson:
    """One randomized person; all randomness from its seed and the generators handed in."""

    seed: int

    def __post_init__(self) -> None:
        r = np.random.default_rng([self.seed, 39])
        self.profile0 = r.uniform(0.0, 1.0, 3)
        self.base = SLOT_PATTERN + r.normal(0.0, 0.6, (N_A, 4)) + r.normal(0, 0.5, (N_A, 1))
        self.bias = r.normal(0.0, 0.6, N_A)
        ls, lw, lm = np.zeros(N_A), np.zeros(N_A), np.zeros(N_A)
        ls[A["SOCIALIZE"]], ls[A["FAMILY_TIME"]] = r.uniform(1.5, 5), r.uniform(0.5, 3)
        ls[A["ME_TIME"]], ls[A["MEDITATE"]] = -r.uniform(1, 4), -r.uniform(0, 1.5)
        lw[A["DEEP_WORK"]], lw[A["ADMIN_WORK"]] = r.uniform(1.5, 4), r.uniform(1, 3)
        lw[A["LEARN"]], lw[A["BINGE_WATCH"]] = r.uniform(0, 2), -r.uniform(0, 2.5)
        lm[FOCUS] = r.uniform(0.5, 2.5, len(FOCUS))
        lm[A["ADMIN_WORK"]] = r.uniform(0, 1)
        self.ls, self.lw, self.lm = ls, lw, lm
        self.sleep_in = r.uniform(0, 3)  # a late person sleeps into the morning
        self.shape = np.array([1.0, r.uniform(-0.2, 0.6), -1.0, -r.uniform(0.5, 1.0)])
        self.needs = r.uniform(0, [1.5, 3.0, 2.0, 2.0])  # tired, lonely, behind, tense
        self.fatigue = (r.uniform(0, 1.2), r.uniform(0.5, 0.9))  # weight, decay
        self.repeat = r.uniform(0, 1.2)
        self.busy_share, self.busy_penalty = r.uniform(0, 0.5), r.uniform(1, 3)
        self.lapse, self.scale = r.uniform(0, 0.3), r.uniform(0.5, 1.8)
        self.effect = EFFECT * r.lognormal(0, 0.35, EFFECT.shape)
        self.effect_s = r.uniform([0.05, 0.02, 0.02], [0.25, 0.12, 0.10])  # soc V, soc SE, me V
        self.effect_w = r.uniform([0.1, 0.05], [0.3, 0.2])  # deep V, admin V
        self.effect_m = r.uniform([0.2, 0.0], [0.9, 0.08])  # progress x, cognition +
        self.homeo = r.uniform(0, 0.1) if r.random() < 0.5 else 0.0
        self.set_point = r.uniform(0.4, 0.8, N_M)
        self.noise_sd = r.uniform(0.01, 0.04)
        self.heavy = r.random() < 0.3
        self.habit = r.choice(
            [A["ADMIN_WORK"], A["BINGE_WATCH"], A["ME_TIME"], A["SLEEP"], A["DEEP_WORK"]], 4
        )
        self.habit[3] = A["SLEEP"] if r.random() < 0.8 else self.habit[3]
        kind = r.integers(3)
        self.walk = r.uniform(0, 0.03) if kind == 1 else 0.0
        self.step = (
            (int(r.integers(5, 25)) * 4, int(r.integers(3)), r.uniform()) if kind == 2 else None
        )
        self.start_meters = r.uniform(0.4, 0.8, N_M)

    def alignment(self, slot: int, m: float) -> float:
        return 2.0 * (m - 0.5) * float(self.shape[slot])

    def utility(
        self, slot: int, meters: np.ndarray, prof: np.ndarray, state: dict[str, Any]
    ) -> np.ndarray:
        s, m, w = prof - 0.5
        al = self.alignment(slot, prof[1])
        v, _c, p, se, co = meters
        u = self.base[:, slot] + self.bias + self.ls * s + self.lw * w + self.lm * al
        if slot == 0:
            u[A["SLEEP"]] -= self.sleep_in * m
        tired = max(0.0, 0.4 - v) * 5
        u[EFFORT] -= self.needs[0] * tired
        u[REST] += self.needs[0] * tired
        u[[A["SOCIALIZE"], A["FAMILY_TIME"]]] += self.needs[1] * (0.5 - co) * (0.5 + s + 0.5)
        u[WORKISH] += self.needs[2] * (0.5 - p) * (w + 1.0)
        u[A["MEDITATE"]] += self.needs[3] * (0.5 - se) * 2
        u[EFFORT] -= self.fatigue[0] * state["fatigue"]
        u -= self.repeat * state["repeat"]
        u -= self.busy_penalty * state["busy"]
        if state["scheduled"] is not None:
            u[state["scheduled"]] += 1.0
        return u

    def delta(
        self, slot: int, a: int, prof: np.ndarray, meters: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        s, _m, w = prof - 0.5
        al = self.alignment(slot, prof[1])
        d = self.effect[a] * (0.6 if slot == 3 and a != A["SLEEP"] else 1.0)
        d = d.copy()
        if a == A["SOCIALIZE"]:
            d[V] += self.effect_s[0] * s
            d[SE] += self.effect_s[1] * s
        if a == A["ME_TIME"]:
            d[V] -= self.effect_s[2] * s
        if a == A["DEEP_WORK"]:
            d[V] += self.effect_w[0] * w
        if a == A["ADMIN_WORK"]:
            d[V] += self.effect_w[1] * w
        if a in FOCUS:
            d[P] *= 1.0 + self.effect_m[0] * al
            d[C] += self.effect_m[1] * al
        d += self.homeo * (self.set_point - meters) - 0.015
        noise = rng.standard_t(3, N_M) * 0.6 if self.heavy else rng.normal(0, 1, N_M)
        return d + self.noise_sd * noise

    def profile(self, t: int, walk: np.ndarray) -> np.ndarray:
        prof = self.profile0 + walk
        if self.step and t >= self.step[0]:
            prof = prof.copy()
            prof[self.step[1]] = self.step[2]
        return np.clip(prof, 0.0, 1.0)


def episode(person: PriorPerson, slots: int) -> tuple[list[dict[str, Any]], np.ndarray]:
    """A month of uniformly random recommendations: runner-shaped history items and the
    true profile at each."""
    rng = np.random.default_rng([person.seed, 40])
    meters = person.start_meters.copy()
    walk = np.zeros(3)
    state: dict[str, Any] = {
        "fatigue": 0.0,
        "repeat": np.zeros(N_A),
        "busy": 0.0,
        "scheduled": None,
    }
    items: list[dict[str, Any]] = []
    truths = []
    for t in range(slots):
        slot = t % 4
        if slot == 0 and person.walk:
            walk = walk + rng.normal(0, person.walk, 3)
        prof = person.profile(t, walk)
        busy = rng.uniform(0.2, 1.0) if slot < 3 and rng.random() < person.busy_share else 0.0
        state["busy"] = busy
        state["scheduled"] = (
            int(rng.choice([*WORKISH, A["SOCIALIZE"]])) if busy and rng.random() < 0.3 else None
        )
        a = int(rng.integers(N_A))
        u = person.utility(slot, meters, prof, state)
        p = (1 - person.lapse) / (1 + np.exp(-person.scale * u[a]))
        accepted = bool(rng.random() < p)
        done = a if accepted else int(person.habit[slot])
        after = np.clip(meters + person.delta(slot, done, prof, meters, rng), 0.0, 1.0)
        item: dict[str, Any] = {
            "day": (t // 4) % 7,
            "slot": slot,
            "meters": {k: float(x) for k, x in zip(METERS, meters, strict=True)},
            "action": ACTIONS[a],
            "response": "accepted" if accepted else "ignored",
            "meter_deltas": {
                k: float(y - x) for k, x, y in zip(METERS, meters, after, strict=True)
            },
            "free_minutes": 240 * (1 - busy) if busy else None,
            "active_event": ACTIONS[state["scheduled"]] if state["scheduled"] is not None else None,
        }
        items.append(item)
        truths.append(prof)
        state["repeat"] = state["repeat"] * 0.5
        state["repeat"][a] += 1.0
        state["fatigue"] = (
            0.0 if done == A["SLEEP"] else state["fatigue"] * person.fatigue[1] + (done in EFFORT)
        )
        meters = after
    return items, np.array(truths)


def dataset(n_people: int, seed: int, slots: int = 112) -> dict[str, np.ndarray]:
    xs, acts, ys, profs, slots_, deltas = [], [], [], [], [], []
    for i in range(n_people):
        items, truths = episode(PriorPerson(seed * 1_000_003 + i), slots)
        cols = columns(items)
        xs.append(history_features(cols))
        acts.append(cols.action)
        ys.append(cols.answer)
        profs.append(truths - 0.5)
        slots_.append(cols.slot)
        after = cols.meters + cols.deltas
        deltas.append(np.where((after > 0.005) & (after < 0.995), cols.deltas, np.nan))
    return {
        "x": np.vstack(xs),
        "a": np.concatenate(acts),
        "y": np.concatenate(ys),
        "profile": np.vstack(profs),
        "slot": np.concatenate(slots_),
        "delta": np.vstack(deltas),
    }


def _logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 30) -> np.ndarray:
    """L2-penalized logistic regression by Newton's method (the first column unpenalized)."""
    w = np.zeros(x.shape[1])
    pen = np.full(x.shape[1], l2)
    pen[0] = 1e-6
    for _ in range(steps):
        p = 1 / (1 + np.exp(-np.clip(x @ w, -35, 35)))
        g = x.T @ (p - y) + pen * w
        h = (x * (p * (1 - p))[:, None]).T @ x + np.diag(pen)
        step = np.linalg.solve(h, g)
        w -= step
        if np.abs(step).max() < 1e-6:
            break
    return w


@dataclass
class TrainReport:
    path: Path
    samples: int
    accept_log_loss: float
    size_bytes: int
    meta: dict[str, Any]


def train_transfer(
    path: Path, *, seed: int = 0, n_people: int = 400, slots: int = 112
) -> TrainReport:
    """Fit the population prior on `n_people` randomized people; the same seed, the same
    bytes of arrays. Small N (20 people) runs in seconds, for CI."""
    data = dataset(n_people, seed, slots)
    x, a, y, prof = data["x"], data["a"], data["y"], data["profile"]
    alpha = np.zeros((N_A, N_X))
    beta = np.zeros((N_A, N_PROFILE, N_X))
    loss = 0.0
    for k in range(N_A):
        sel = a == k
        xa = x[sel]
        design = np.hstack([xa] + [xa * prof[sel, j : j + 1] for j in range(N_PROFILE)])
        w = _logistic(design, y[sel])
        alpha[k] = w[:N_X]
        beta[k] = w[N_X:].reshape(N_PROFILE, N_X)
        p = np.clip(1 / (1 + np.exp(-np.clip(design @ w, -35, 35))), 1e-6, 1 - 1e-6)
        loss += float(-(y[sel] * np.log(p) + (1 - y[sel]) * np.log(1 - p)).sum())
    d = np.array([delta_context(int(s)) for s in data["slot"]])
    n_d = d.shape[1]
    gamma = np.zeros((N_A, N_M, n_d))
    delta = np.zeros((N_A, N_M, N_PROFILE, n_d))
    delta_sd = np.full((N_A, N_M), 0.05)
    for k in range(N_A):
        sel = (a == k) & (y == 1)
        design = np.hstack([d[sel]] + [d[sel] * prof[sel, j : j + 1] for j in range(N_PROFILE)])
        for mi in range(N_M):
            target = data["delta"][sel, mi]
            good = np.isfinite(target)
            if good.sum() < design.shape[1] + 5:
                continue
            g, t = design[good], target[good]
            w = np.linalg.solve(g.T @ g + 1e-3 * np.eye(g.shape[1]), g.T @ t)
            gamma[k, mi] = w[:n_d]
            delta[k, mi] = w[n_d:].reshape(N_PROFILE, n_d)
            delta_sd[k, mi] = max(float(np.std(t - g @ w)), 0.005)
    prior_mean = np.zeros(N_LATENT)
    prior_cov = np.zeros((N_LATENT, N_LATENT))
    prior_cov[:N_PROFILE, :N_PROFILE] = np.cov(prof.T)
    prior_cov[N_PROFILE, N_PROFILE] = 0.5**2  # a person's general readiness to say yes
    idx = np.arange(N_PROFILE + 1, N_LATENT)
    prior_cov[idx, idx] = 0.6**2  # a person's own liking of each action
    meta = {
        "model_version": MODEL_VERSION,
        "seed": seed,
        "people": n_people,
        "slots": slots,
        "delta_weight": 0.5,
        "forget": FORGET,
        "population": "bridge.sim.prior_people",
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, Any] = {
        "alpha": alpha.astype(np.float32),
        "beta": beta.astype(np.float32),
        "gamma": gamma.astype(np.float32),
        "delta": delta.astype(np.float32),
        "delta_sd": delta_sd.astype(np.float32),
        "prior_mean": prior_mean.astype(np.float32),
        "prior_cov": prior_cov.astype(np.float32),
    }
    with path.open("wb") as f:
        np.savez_compressed(f, meta=np.array(json.dumps(meta, sort_keys=True)), **arrays)
    return TrainReport(path, len(y), loss / len(y), path.stat().st_size, meta)


HELD_OUT = 7_000_000  # seed base of people the prior is never fitted on


class PriorSimPerson:
    """A PriorPerson as a bridge.sim.family.SimPerson, to run runners on the prior's own
    kind of people (held-out seeds): answers late (1-3 slots) or never at personal rates."""

    def __init__(self, index: int, seed: int = 0) -> None:
        self.seed = HELD_OUT + seed * 100_000 + index
        self.person = PriorPerson(self.seed)
        r = np.random.default_rng([self.seed, 41])
        self.walks = np.cumsum(r.normal(0, self.person.walk or 0.0, (64, 3)), axis=0)
        self.late, self.never = r.uniform(0, 0.3), r.uniform(0, 0.2)
        self.state: dict[str, Any] = {
            "fatigue": 0.0,
            "repeat": np.zeros(N_A),
            "busy": 0.0,
            "scheduled": None,
        }

    def profile(self, t: int) -> np.ndarray:
        return self.person.profile(t, self.walks[min(t // 4, len(self.walks) - 1)])

    def start(self) -> np.ndarray:
        return self.person.start_meters.copy()

    def calendar(self, t: int) -> None:
        return None

    def accept_probabilities(self, t: int, meters: np.ndarray, cal: Any) -> np.ndarray:
        u = self.person.utility(t % 4, meters, self.profile(t), self.state)
        return (1 - self.person.lapse) / (1 + np.exp(-self.person.scale * u))

    def answer(
        self, t: int, action: int, meters: np.ndarray, cal: Any, rng: np.random.Generator
    ) -> Any:
        from bridge.sim.family import Answer

        accepted = bool(rng.random() < self.accept_probabilities(t, meters, cal)[action])
        draw = rng.random()
        delay = (
            None
            if draw < self.never
            else (int(rng.integers(1, 4)) if draw < self.never + self.late else 0)
        )
        return Answer(accepted, delay)

    def advance(
        self, t: int, meters: np.ndarray, action: int, accepted: bool, rng: np.random.Generator
    ) -> np.ndarray:
        p = self.person
        done = action if accepted else int(p.habit[t % 4])
        after = np.clip(meters + p.delta(t % 4, done, self.profile(t), meters, rng), 0.0, 1.0)
        s = self.state
        s["repeat"] = s["repeat"] * 0.5
        s["repeat"][action] += 1.0
        s["fatigue"] = 0.0 if done == A["SLEEP"] else s["fatigue"] * p.fatigue[1] + (done in EFFORT)
        return after
