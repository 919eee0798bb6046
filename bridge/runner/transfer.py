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
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from bridge.errors import InputError
from bridge.runner.base import Recommendation, available_actions
from bridge.runner.features import (
    N_CTX,
    RESPONSE_VALUE,
    booked,
    context,
    delta_context,
    meters_of,
)
from bridge.runner.online import OnlineLogistic
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
PROBE = 0.3
PROBE_HORIZON = 12
EDGE = 0.005  # a meter this close to 0 or 1 was clipped: its change says little


def default_model_path() -> Path:
    return Path(str(files("bridge.runner").joinpath("models/transfer.npz")))


def state_features(
    slot: int,
    meters: np.ndarray,
    action: str,
    before: list[dict[str, Any]],
    *,
    free_minutes: float | None = None,
    scheduled: bool = False,
) -> np.ndarray:
    """x for recommending `action` after the history items `before` (the latest last)."""
    x = np.empty(N_X)
    x[:N_CTX] = context(slot, meters, booked(free_minutes), scheduled)
    recent = before[-RECENT:]
    x[N_CTX] = sum(1 for h in recent if h.get("action") == action) / RECENT
    answered = [
        RESPONSE_VALUE[h["response"]] for h in recent if h.get("response") in RESPONSE_VALUE
    ]
    x[N_CTX + 1] = (sum(answered) / len(answered) - 0.5) if answered else 0.0
    last = (before[-1].get("meter_deltas") or {}) if before else {}
    for j, meter in enumerate(("vitality", "serenity")):
        value = last.get(meter)
        x[N_CTX + 2 + j] = 0.0 if value is None else float(value) * DELTA_SCALE
    return np.clip(np.nan_to_num(x, nan=0.0), -5.0, 5.0)


def item_features(history: list[dict[str, Any]], i: int) -> np.ndarray:
    item = history[i]
    return state_features(
        int(item.get("slot") or 0) % 4,
        meters_of(item.get("meters") or {}),
        str(item.get("action")),
        history[:i],
        free_minutes=item.get("free_minutes"),
        scheduled=item.get("active_event") is not None
        and item.get("active_event") == item.get("action"),
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
                self.drift = data["drift"].astype(float)  # (L,) variance added per answer
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
        self.version = f"{self.meta.get('model_version', 1)}-seed{self.meta.get('seed', 0)}"

    def answer_row(self, a: int, x: np.ndarray) -> tuple[np.ndarray, float]:
        """The latent's feature vector and the known offset of action a's logit at x."""
        z = np.zeros(N_LATENT)
        z[:N_PROFILE] = self.beta[a] @ x
        z[N_PROFILE] = 1.0
        z[N_PROFILE + 1 + a] = 1.0
        return z, float(self.alpha[a] @ x)

    def delta_rows(self, a: int, slot: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(M, L) rows, (M,) population means and (M,) tempered variances of a's changes."""
        d = delta_context(slot)
        h = np.zeros((len(METERS), N_LATENT))
        h[:, :N_PROFILE] = np.einsum("mkd,d->mk", self.delta[a], d)
        var = self.delta_sd[a] ** 2 / max(self.delta_weight, 1e-6)
        return h, self.gamma[a] @ d, var


@lru_cache(maxsize=4)
def load_model(path: str | None = None) -> TransferModel:
    return TransferModel(Path(path) if path else default_model_path())


def _fingerprint(item: dict[str, Any]) -> tuple[Any, ...]:
    return (item.get("day"), item.get("slot"), item.get("action"))


class TransferRunner:
    name = "transfer"

    def __init__(self, model: str | TransferModel | None = None) -> None:
        self.model = model if isinstance(model, TransferModel) else load_model(model)
        self.version = self.model.version
        self._reset()

    def _reset(self) -> None:
        m = self.model
        self.learner = OnlineLogistic(m.prior_mean, cov=m.prior_cov)
        self._seen: list[tuple[Any, ...]] = []
        self._read: set[int] = set()
        self.answers = 0

    def read(self, history: list[dict[str, Any]]) -> OnlineLogistic:
        """The person's posterior after every answer of `history` that has arrived; only
        answers not read before cost anything (a late one is read when it comes)."""
        keys = [_fingerprint(h) for h in history[: len(self._seen)]]
        if len(history) < len(self._seen) or keys != self._seen:
            self._reset()  # another person's history, or a rewritten one
        self._seen += [_fingerprint(h) for h in history[len(self._seen) :]]
        m = self.model
        for i, item in enumerate(history):
            if i in self._read or item.get("response") not in RESPONSE_VALUE:
                continue
            self._read.add(i)
            try:
                a = ACTIONS.index(str(item.get("action")))
            except ValueError:
                continue
            self.answers += 1
            # Drift: the person may have changed since the last answer, but never
            # beyond what the population allows.
            self.learner.cov = self.learner.cov + np.diag(m.drift)
            z, offset = m.answer_row(a, item_features(history, i))
            self.learner.update(z, int(RESPONSE_VALUE[item["response"]]), offset)
            if item["response"] == "accepted":
                self._read_changes(item, a)
        return self.learner

    def _read_changes(self, item: dict[str, Any], a: int) -> None:
        deltas = item.get("meter_deltas") or {}
        before = item.get("meters") or {}
        y = np.array([np.nan if deltas.get(k) is None else float(deltas[k]) for k in METERS])
        start = np.array([np.nan if before.get(k) is None else float(before[k]) for k in METERS])
        after = start + y
        y[~((after > EDGE) & (after < 1.0 - EDGE))] = np.nan  # clipped or unknown
        h, mean, var = self.model.delta_rows(a, int(item.get("slot") or 0) % 4)
        self.learner.observe(h, y - mean, var)

    def predict(
        self, observation: dict[str, Any], history: list[dict[str, Any]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """P(accept) of every action now, and the variance of each logit."""
        learner = self.read(history)
        m = self.model
        slot, meters = int(observation.get("slot") or 0) % 4, meters_of(observation)
        scheduled = observation.get("active_event")
        free = observation.get("free_minutes")
        p, var = np.empty(len(ACTIONS)), np.empty(len(ACTIONS))
        for a, name in enumerate(ACTIONS):
            x = state_features(
                slot, meters, name, history, free_minutes=free, scheduled=scheduled == name
            )
            z, offset = m.answer_row(a, x)
            mean, var[a] = learner.logit(z, offset)
            p[a] = 1.0 / (
                1.0 + math.exp(-max(min(mean / math.sqrt(1 + math.pi * var[a] / 8), 35), -35))
            )
        return p, var

    def recommend(
        self, observation: dict[str, Any], history: list[dict[str, Any]]
    ) -> Recommendation:
        p, var = self.predict(observation, history)
        m, learner = self.model, self.learner
        slot, meters = int(observation.get("slot") or 0) % 4, meters_of(observation)
        d = delta_context(slot)
        profile = learner.mean[:N_PROFILE]
        expected_delta = np.einsum("amd,d->am", m.gamma, d) + np.einsum(
            "amkd,d,k->am", m.delta, d, profile
        )
        known = np.array([observation.get(k) is not None for k in METERS])
        shortfall = (np.maximum(0.0, SAFE - (meters + expected_delta)) * known).sum(1)
        # What an answer would teach: the logit's spread, where the answer is uncertain.
        gain = 0.5 * np.log1p(var * p * (1.0 - p))
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
