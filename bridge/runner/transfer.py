"""The transfer runner: a population prior over acceptance, read per person online.

A hierarchical Bayesian model. Whether a person accepts action a in state x (slot,
meters, how far each is low, the calendar, how often a was just recommended, how the
last answers went, how the meters moved after the last actions) has the logit

    alpha_a . x  +  (beta_a x) . u_profile  +  u_offset  +  u_a

where alpha and beta are the population's (fitted on a procedurally randomized simulated
population, bridge.sim.prior_people) and u = [S-0.5, M-0.5, W-0.5, offset, one effect
per action] is the person's own, with the population's Gaussian prior. Every answer is a
Laplace step on u (bridge.runner.online), and every meter change after an accepted action
an exact Kalman step: a change is the population's gamma_a d + (delta_a d) . u_profile
plus noise (d: the slot). A little process noise per answer lets the posterior follow a
person who changes. The belief is 0.5 + the posterior mean of u_profile, its sd the
posterior's. It recommends what the person most likely accepts, probing early where an
answer teaches most, never what is expected to leave a meter below 0.2. Numpy only.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from bridge.errors import InputError
from bridge.runner.base import Recommendation, available_actions
from bridge.runner.features import (
    LOW,
    N_CTX,
    N_DCTX,
    RESPONSE_VALUE,
    booked,
    delta_context,
    meters_of,
)
from bridge.runner.online import OnlineLogistic, laplace
from mappings.actions import ACTIONS, METERS

N_EXTRA = 4  # same action in the last RECENT, last answers' acceptance, last vitality
# and serenity changes
N_X = N_CTX + N_EXTRA
N_PROFILE = 3
N_LATENT = N_PROFILE + 1 + len(ACTIONS)  # profile, offset, one effect per action
RECENT = 4
DELTA_SCALE = 10.0  # a meter change of 0.1 is a feature of 1
SAFE = 0.2
GUARD = 10.0
# How much the early answers trade a likely yes for what an answer would teach, and for
# how many answers: chosen on the prior's own people (200-279), never on a family.
PROBE = 1.0
PROBE_HORIZON = 20
EDGE = 0.005  # a meter this close to 0 or 1 was clipped: its change says little
FORGET = 0.98  # an answer counts this much less per later item: people change
ACTION_INDEX = {name: i for i, name in enumerate(ACTIONS)}
LAST_METERS = [METERS.index("vitality"), METERS.index("serenity")]


def default_model_path() -> Path:
    return Path(str(files("bridge.runner").joinpath("models/transfer.npz")))


@dataclass
class Columns:
    """A history as arrays (one row per item): what the features and the evidence read."""

    slot: np.ndarray  # (n,) int
    meters: np.ndarray  # (n, M), unknown 0.5
    busy: np.ndarray  # (n,)
    scheduled: np.ndarray  # (n,) bool: the calendar held the recommended action
    action: np.ndarray  # (n,) int, -1 unknown
    answer: np.ndarray  # (n,) 1 accepted, 0 ignored, nan not (yet) answered
    deltas: np.ndarray  # (n, M), nan unknown
    known: np.ndarray  # (n, M) bool: the meter before was known


def _number(value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return math.nan
    return out


Row = tuple[int, list[float], list[float], float, int, bool]


def _row(item: dict[str, Any]) -> Row:
    """What an item says besides its answer (which may still come): slot, meters before
    (nan unknown), meter changes, how booked, the action's index, whether it was scheduled."""
    slot = _number(item.get("slot"))
    before = item.get("meters") or {}
    deltas = item.get("meter_deltas") or {}
    action = item.get("action")
    return (
        int(slot) % 4 if math.isfinite(slot) else 0,
        [_number(before.get(m)) for m in METERS],
        [_number(deltas.get(m)) for m in METERS],
        booked(item.get("free_minutes")),
        ACTION_INDEX.get(action, -1) if isinstance(action, str) else -1,
        action is not None and item.get("active_event") == action,
    )


def _answer(response: Any) -> float:
    return RESPONSE_VALUE.get(response, math.nan) if isinstance(response, str) else math.nan


def columns(
    history: list[dict[str, Any]], cache: list[tuple[dict[str, Any], Row]] | None = None
) -> Columns:
    """The history as arrays. With `cache` (a runner's, kept between calls) an item already
    read is not parsed again; its answer is read every time (a late one arrives in place)."""
    rows: list[Row] = []
    for i, item in enumerate(history):
        if cache is not None and i < len(cache) and cache[i][0] is item:
            rows.append(cache[i][1])
            continue
        row = _row(item)
        rows.append(row)
        if cache is not None:
            del cache[i:]
            cache.append((item, row))
    n = len(rows)
    meters = np.array([r[1] for r in rows], dtype=float).reshape(n, len(METERS))
    known = np.isfinite(meters)
    answer = np.array([_answer(h.get("response")) for h in history], dtype=float)
    return Columns(
        np.array([r[0] for r in rows], dtype=int),
        np.where(known, meters, 0.5),
        np.array([r[3] for r in rows], dtype=float),
        np.array([r[5] for r in rows], dtype=bool),
        np.array([r[4] for r in rows], dtype=int),
        answer,
        np.array([r[2] for r in rows], dtype=float).reshape(n, len(METERS)),
        known,
    )


def _features(
    slot: np.ndarray,
    meters: np.ndarray,
    *,
    busy: np.ndarray,
    scheduled: np.ndarray,
    same: np.ndarray,
    answered: np.ndarray,
    last: np.ndarray,
) -> np.ndarray:
    """(n, N_X) from per-row parts: the context (bridge.runner.features.context, row by
    row), how often the action was recommended in the last RECENT items, the share of the
    last RECENT answers that were yes (minus 0.5), the previous item's meter changes."""
    n = len(slot)
    x = np.zeros((n, N_X))
    x[:, 0] = 1.0
    x[np.arange(n), 1 + slot % 4] = 1.0
    x[:, 5:10] = meters
    x[:, 10:15] = np.maximum(0.0, LOW - meters)
    x[:, 15] = busy
    x[:, 16] = scheduled
    x[:, N_CTX] = same / RECENT
    x[:, N_CTX + 1] = answered
    x[:, N_CTX + 2 :] = last * DELTA_SCALE
    return np.clip(np.nan_to_num(x, nan=0.0, posinf=5.0, neginf=-5.0), -5.0, 5.0)


def _recent(cols: Columns, i: int) -> tuple[np.ndarray, float, np.ndarray]:
    """Before item i: the actions of the last RECENT items, the yes share of their answers
    (minus 0.5; 0 with none), the previous item's vitality and serenity changes."""
    lo = max(0, i - RECENT)
    acts = cols.action[lo:i]
    answers = cols.answer[lo:i]
    answers = answers[np.isfinite(answers)]
    share = float(answers.mean() - 0.5) if len(answers) else 0.0
    last = cols.deltas[i - 1, LAST_METERS] if i else np.zeros(len(LAST_METERS))
    return acts, share, last


def history_features(cols: Columns) -> np.ndarray:
    """(n, N_X): the state each item of a history was recommended in (as _recent reads it,
    for every item at once)."""
    n = len(cols.slot)
    same, yes, answered = np.zeros(n), np.zeros(n), np.zeros(n)
    for k in range(1, RECENT + 1):
        if k >= n:
            break
        same[k:] += cols.action[:-k] == cols.action[k:]
        there = np.isfinite(cols.answer[:-k])
        yes[k:] += np.where(there, cols.answer[:-k], 0.0)
        answered[k:] += there
    share = np.where(answered > 0, yes / np.maximum(answered, 1) - 0.5, 0.0)
    last = np.zeros((n, len(LAST_METERS)))
    if n > 1:
        last[1:] = cols.deltas[:-1][:, LAST_METERS]
    return _features(
        cols.slot,
        cols.meters,
        busy=cols.busy,
        scheduled=cols.scheduled.astype(float),
        same=same,
        answered=share,
        last=last,
    )


def next_features(observation: dict[str, Any], cols: Columns) -> np.ndarray:
    """(A, N_X): the state now, for recommending each action."""
    n_a = len(ACTIONS)
    slot = _number(observation.get("slot"))
    meters = meters_of(observation)
    meters = np.where(np.isfinite(meters), meters, 0.5)
    acts, share, last = _recent(cols, len(cols.slot))
    event = observation.get("active_event")
    return _features(
        np.full(n_a, int(slot) % 4 if math.isfinite(slot) else 0),
        np.tile(meters, (n_a, 1)),
        busy=np.full(n_a, booked(observation.get("free_minutes"))),
        scheduled=np.array([float(a == event) for a in ACTIONS]),
        same=np.array([np.count_nonzero(acts == a) for a in range(n_a)], dtype=float),
        answered=np.full(n_a, share),
        last=np.tile(last, (n_a, 1)),
    )


class TransferModel:
    """The population's part, loaded from NPZ without pickle."""

    def __init__(self, path: Path) -> None:
        try:
            with np.load(path, allow_pickle=False) as data:
                self.meta: dict[str, Any] = json.loads(str(data["meta"]))
                self.alpha = data["alpha"].astype(float)  # (A, X)
                self.beta = data["beta"].astype(float)  # (A, 3, X)
                self.gamma = data["gamma"].astype(float)  # (A, M, D)
                self.delta = data["delta"].astype(float)  # (A, M, 3, D)
                self.delta_sd = data["delta_sd"].astype(float)  # (A, M)
                self.prior_mean = data["prior_mean"].astype(float)  # (L,)
                self.prior_cov = data["prior_cov"].astype(float)  # (L, L)
        except (OSError, KeyError, ValueError) as exc:
            raise InputError(
                f"{path}: not a transfer model ({exc}); retrain it with "
                "bridge.sim.prior_people.train_transfer"
            ) from None
        if self.alpha.shape != (len(ACTIONS), N_X) or len(self.prior_mean) != N_LATENT:
            raise InputError(
                f"{path}: shapes {self.alpha.shape}/{len(self.prior_mean)} do not fit this "
                "version's features; retrain it with bridge.sim.prior_people.train_transfer"
            )
        self.delta_weight = float(self.meta.get("delta_weight", 0.5))
        self.forget = float(self.meta.get("forget", FORGET))
        self.version = f"{self.meta.get('model_version', 1)}-seed{self.meta.get('seed', 0)}"


@lru_cache(maxsize=4)
def load_model(path: str | None = None) -> TransferModel:
    return TransferModel(Path(path) if path else default_model_path())


class TransferRunner:
    name = "transfer"

    def __init__(self, model: str | TransferModel | None = None) -> None:
        self.model = model if isinstance(model, TransferModel) else load_model(model)
        self.version = self.model.version
        self.answers = 0
        self._parsed: list[tuple[dict[str, Any], Row]] = []  # items read, by position

    def posterior(self, history: list[dict[str, Any]]) -> tuple[OnlineLogistic, Columns]:
        """The person's Gaussian posterior over u from every answer that has arrived (a late
        one counts once it is there, a missing one not at all) and every meter change after
        an accepted action; an answer `FORGET` per later item counts less (people change)."""
        m = self.model
        cols = columns(history, self._parsed)
        x = history_features(cols)
        n = len(cols.slot)
        idx = np.flatnonzero(np.isfinite(cols.answer) & (cols.action >= 0))
        self.answers = len(idx)
        weight = m.forget ** (n - 1 - idx).astype(float)
        acts, xa = cols.action[idx], x[idx]
        z = np.zeros((len(idx), N_LATENT))
        z[:, :N_PROFILE] = np.einsum("nkx,nx->nk", m.beta[acts], xa)
        z[:, N_PROFILE] = 1.0
        z[np.arange(len(idx)), N_PROFILE + 1 + acts] = 1.0
        offset = np.einsum("nx,nx->n", m.alpha[acts], xa)
        yes = cols.answer[idx] == 1.0
        ai, wi = acts[yes], weight[yes]
        dctx = np.zeros((len(ai), N_DCTX))
        dctx[:, 0] = 1.0
        dctx[np.arange(len(ai)), 1 + cols.slot[idx][yes]] = 1.0
        h = np.einsum("nmkd,nd->nmk", m.delta[ai], dctx)  # (n, M, 3)
        resid = cols.deltas[idx][yes] - np.einsum("nmd,nd->nm", m.gamma[ai], dctx)
        after = cols.meters[idx][yes] + cols.deltas[idx][yes]
        # a meter that ended at 0 or 1 was clipped, an unknown one says nothing
        good = cols.known[idx][yes] & np.isfinite(resid) & (after > EDGE) & (after < 1 - EDGE)
        inv_var = np.where(good, wi[:, None] * m.delta_weight / m.delta_sd[ai] ** 2, 0.0)
        resid = np.where(good, resid, 0.0)
        precision = np.zeros((N_LATENT, N_LATENT))
        info = np.zeros(N_LATENT)
        precision[:N_PROFILE, :N_PROFILE] = np.einsum("nmk,nm,nml->kl", h, inv_var, h)
        info[:N_PROFILE] = np.einsum("nmk,nm->k", h, inv_var * resid)
        learner = laplace(
            m.prior_mean, m.prior_cov, (z, cols.answer[idx], offset, weight), (precision, info)
        )
        return learner, cols

    def predict(
        self, observation: dict[str, Any], history: list[dict[str, Any]]
    ) -> tuple[np.ndarray, np.ndarray, OnlineLogistic]:
        """P(accept) of every action now, the variance of each logit, the posterior."""
        learner, cols = self.posterior(history)
        m = self.model
        x = next_features(observation, cols)
        z = np.zeros((len(ACTIONS), N_LATENT))
        z[:, :N_PROFILE] = np.einsum("akx,ax->ak", m.beta, x)
        z[:, N_PROFILE] = 1.0
        z[:, N_PROFILE + 1 :] = np.eye(len(ACTIONS))
        mean = z @ learner.mean + np.einsum("ax,ax->a", m.alpha, x)
        var = np.maximum(np.einsum("ak,kl,al->a", z, learner.cov, z), 0.0)
        p = 1.0 / (1.0 + np.exp(-np.clip(mean / np.sqrt(1.0 + np.pi * var / 8.0), -35, 35)))
        return p, var, learner

    def recommend(
        self, observation: dict[str, Any], history: list[dict[str, Any]]
    ) -> Recommendation:
        p, var, learner = self.predict(observation, history)
        m = self.model
        slot = _number(observation.get("slot"))
        d = delta_context(int(slot) % 4 if math.isfinite(slot) else 0)
        meters = meters_of(observation)
        profile = learner.mean[:N_PROFILE]
        h = np.einsum("amkd,d->amk", m.delta, d)  # (A, M, 3): how a change reads the profile
        expected_delta = np.einsum("amd,d->am", m.gamma, d) + h @ profile
        known = np.isfinite(meters) & np.array([observation.get(k) is not None for k in METERS])
        meters = np.where(known, meters, 0.5)
        shortfall = (np.maximum(0.0, SAFE - (meters + expected_delta)) * known).sum(1)
        # What an answer would teach: the logit's spread, where the answer is uncertain;
        # and, if accepted, what the meters' change would say of the profile (most of the
        # evidence: a linear-Gaussian reading, so its information is exact).
        w = m.delta_weight / m.delta_sd**2  # (A, M)
        sigma = learner.cov[:N_PROFILE, :N_PROFILE]
        fisher = np.einsum("amk,am,aml->akl", h, w, h)
        _, logdet = np.linalg.slogdet(np.eye(N_PROFILE) + fisher @ sigma)
        gain = 0.5 * np.log1p(var * p * (1.0 - p)) + p * 0.5 * logdet
        weight = PROBE * max(0.0, 1.0 - self.answers / PROBE_HORIZON)
        score = p + weight * gain - GUARD * shortfall
        allowed = set(available_actions(observation))
        if allowed:
            score = np.where([x in allowed for x in ACTIONS], score, -np.inf)
        a = int(np.argmax(score))
        belief = np.clip(0.5 + profile, 0.0, 1.0)
        sd = np.sqrt(np.clip(np.diag(learner.cov)[:N_PROFILE], 0.0, None))
        shape = " ".join(f"{k}={v:.2f}" for k, v in zip("SMW", belief, strict=True))
        source = (
            f"{self.answers} answers" if self.answers else "no answers yet, the population prior"
        )
        return Recommendation(
            ACTIONS[a],
            [round(float(b), 3) for b in belief],
            f"{source} ({shape}); {ACTIONS[a]} next (P(accept)≈{p[a]:.2f})",
            self.name,
            self.version,
            extra={
                "expected_accept": float(p[a]),
                "belief_sd": [round(float(x), 3) for x in sd],
                "accept": {name: round(float(q), 4) for name, q in zip(ACTIONS, p, strict=True)},
            },
        )
