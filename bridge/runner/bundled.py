"""The bundled model: infers the person's profile from their answers, in context.

It was trained on simulated people (`rhythm-bridge train-model`): an acceptance model
and a meter-change model, both conditioned on a profile [S, M, W]. For a real person it
scores every candidate profile on a grid by how well it explains their history
(accepted/ignored answers and the meter changes after accepted actions), takes the
posterior, and recommends what that person most likely accepts, probing early on where
the answers would teach it most, and never what is expected to push a meter below 0.2.
No weights change at inference; a weekly adapter (bridge.learning.adapter) can sharpen the prior.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from bridge.runner.base import Recommendation, available_actions
from bridge.runner.features import (
    N_CTX,
    RESPONSE_VALUE,
    booked,
    context,
    delta_context,
    item_context,
    meters_of,
    profile_features,
)
from mappings.actions import ACTIONS, METERS

GRID_POINTS = 9
IN_RANGE = (0.1, 0.9)  # where the training profiles lived; outside is allowed, less likely
OUTSIDE_PRIOR = 0.35
SAFE = 0.2  # never recommend what is expected to leave a meter below this
GUARD = 10.0  # score lost per unit a meter is expected to end below SAFE
# Tempers the meter-change evidence (real meters are noisier than sim). A model trained
# since issue 22 carries its own value in meta["delta_weight"], chosen at training time on
# the training families' held-in people; this is the value for older artifacts.
DELTA_WEIGHT = 0.5
# People differ in how often they say yes at all: a per-person logit offset on every
# acceptance, integrated out over this grid under a N(0, OFFSET_SD) prior, so a yes-sayer
# is not mistaken for a profile. (0,) turns it off.
OFFSETS = (-1.0, -0.5, 0.0, 0.5, 1.0)
OFFSET_SD = 0.6
PROBE = 0.6  # weight of information gain over expected acceptance at the first step
PROBE_HORIZON = 16  # ... falling to zero over this many answers
AXES = ("S", "M", "W")


def default_model_path() -> Path:
    return Path(str(files("bridge.runner").joinpath("models/bundled.npz")))


class BundledModel:
    """The trained arrays plus the profile grid, loaded from NPZ without pickle."""

    def __init__(self, path: Path) -> None:
        _single_threaded_blas()
        with np.load(path, allow_pickle=False) as data:
            self.meta: dict[str, Any] = json.loads(str(data["meta"]))
            self.accept_w = data["accept_w"].astype(np.float64)  # (A, ctx, prof)
            self.delta_w = data["delta_w"].astype(np.float64)  # (A, dctx, prof, meters)
            self.delta_sd = data["delta_sd"].astype(np.float64)  # (A, meters)
        if self.accept_w.shape[1] < N_CTX:  # a model from before the calendar features
            pad = N_CTX - self.accept_w.shape[1]
            self.accept_w = np.pad(self.accept_w, ((0, 0), (0, pad), (0, 0)))
        axis = np.linspace(0.0, 1.0, GRID_POINTS)
        self.grid = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), -1).reshape(-1, 3)
        self.g = profile_features(self.grid)  # (K, prof)
        self.g32 = self.g.astype(np.float32)
        inside = (self.grid >= IN_RANGE[0] - 1e-9) & (self.grid <= IN_RANGE[1] + 1e-9)
        self.log_prior = np.log(np.where(inside, 1.0, OUTSIDE_PRIOR)).sum(1)
        self.version = f"{self.meta['model_version']}-seed{self.meta['seed']}"
        self.delta_weight = float(self.meta.get("delta_weight", DELTA_WEIGHT))

    def accept_logits(self, actions: np.ndarray, ctx: np.ndarray) -> np.ndarray:
        """(n,) actions in (n, ctx) contexts -> (n, K) logits, one per grid profile."""
        w = np.matmul(ctx[:, None, :], self.accept_w[actions])[:, 0, :]  # (n, prof)
        return w.astype(np.float32) @ self.g32.T

    def log_posterior(
        self,
        history: list[dict[str, Any]],
        log_prior: np.ndarray | None = None,
        bias: np.ndarray | None = None,
        delta_weight: float | None = None,
        offsets: tuple[float, ...] = (0.0,),
    ) -> np.ndarray:
        """(K,) log posterior over the profile grid (any acceptance offset integrated out)."""
        joint = self.log_joint(history, log_prior, bias, delta_weight, offsets)
        top = joint.max()
        return np.log(np.exp(joint - top).sum(1)) + top

    def log_joint(
        self,
        history: list[dict[str, Any]],
        log_prior: np.ndarray | None = None,
        bias: np.ndarray | None = None,
        delta_weight: float | None = None,
        offsets: tuple[float, ...] = (0.0,),
    ) -> np.ndarray:
        """(K, B) log posterior over profile x acceptance offset, max 0."""
        off = np.asarray(offsets, dtype=np.float64)
        logp = (self.log_prior if log_prior is None else log_prior)[:, None] - 0.5 * (
            off / OFFSET_SD
        ) ** 2
        items = [
            h for h in history if h.get("action") in ACTIONS and h.get("response") in RESPONSE_VALUE
        ]
        if not items:
            return logp - logp.max()
        acts = np.array([ACTIONS.index(h["action"]) for h in items])
        y = np.array([RESPONSE_VALUE[h["response"]] for h in items])
        ctx = np.array([item_context(h) for h in items])
        z = self.accept_logits(acts, ctx)
        if bias is not None:
            z = z + bias[acts][:, None].astype(np.float32)
        # log sigmoid(z) if accepted, log sigmoid(-z) if not; stable for large |z|. One
        # (n, K) array per offset, worked on in place (it stays in cache): this is most of
        # a recommendation's time.
        flip = np.where(y == 1.0, -1.0, 1.0).astype(np.float32)[:, None]
        x = np.empty_like(z)
        for j, b in enumerate(off.astype(np.float32)):
            np.add(z, b, out=x)
            np.multiply(x, flip, out=x)  # -signed
            np.clip(x, -30.0, 30.0, out=x)
            np.exp(x, out=x)
            np.log1p(x, out=x)
            logp[:, j] -= x.sum(0, dtype=np.float64)
        acc = [i for i, h in enumerate(items) if y[i] == 1.0 and h.get("meter_deltas")]
        if acc:
            before = np.array([meters_of(items[i].get("meters") or {}) for i in acc])
            raw = [items[i]["meter_deltas"] for i in acc]
            obs = np.array([[np.nan if d.get(m) is None else d[m] for m in METERS] for d in raw])
            after = before + obs
            # Unknown meters and changes cut off at 0 or 1 carry no evidence.
            usable = ~np.isnan(obs) & (after > 0.005) & (after < 0.995)
            # Each expected change is linear in g(profile), so the Gaussian log-likelihood
            # summed over items is a quadratic form in g: O(items) work, not O(items x grid).
            wd = np.einsum(
                "nd,ndpm->nmp",
                np.array([delta_context(items[i]["slot"]) for i in acc]),
                self.delta_w[acts[acc]],
            )  # (n, meters, prof)
            prec = usable / self.delta_sd[acts[acc]] ** 2  # (n, meters)
            obs = np.nan_to_num(obs)
            quad = np.einsum("nm,nmp,nmq->pq", prec, wd, wd)
            lin = np.einsum("nm,nm,nmp->p", prec, obs, wd)
            ll = self.g @ lin - 0.5 * np.einsum("kp,pq,kq->k", self.g, quad, self.g)
            weight = self.delta_weight if delta_weight is None else delta_weight
            logp += (weight * ll)[:, None]
        return logp - logp.max()


def _without_calendar(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k not in ("free_minutes", "active_event")}


@lru_cache(maxsize=1)
def _single_threaded_blas() -> None:
    # The products here are tiny: waking BLAS threads costs 10x the work itself, and on
    # a shared home server (or a Pi) the other cores belong to someone else.
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, "blas")


@lru_cache(maxsize=4)
def load_model(path: str | None = None) -> BundledModel:
    return BundledModel(Path(path) if path else default_model_path())


def _entropy(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-9, 1 - 1e-9)
    return -(p * np.log(p) + (1 - p) * np.log(1 - p))


class BundledRunner:
    name = "bundled"

    def __init__(
        self,
        model: str | None = None,
        adapter: str | dict[str, Any] | None = None,
        probe: float = PROBE,
        probe_horizon: int = PROBE_HORIZON,
        guard: float = GUARD,
        calendar: bool = True,
        delta_weight: float | None = None,
        offsets: tuple[float, ...] | None = None,
    ) -> None:
        self.model = load_model(model)
        self.offsets = OFFSETS if offsets is None else offsets
        # None: the model's own tempering; a value: only for choosing one at training time
        self.delta_weight = self.model.delta_weight if delta_weight is None else delta_weight
        self.calendar = calendar  # False: ignore how booked a slot is (for comparison)
        self.version = self.model.version
        self.probe, self.probe_horizon, self.guard = probe, probe_horizon, guard
        self.log_prior: np.ndarray | None = None
        self.bias: np.ndarray | None = None
        self.history_since = None  # with an adapter: it already holds the older answers
        if adapter:
            from bridge.runner.adapter import load_adapter

            fitted = load_adapter(adapter, self.model)
            self.log_prior, self.bias = fitted.log_prior, fitted.action_bias
            self.history_since = fitted.through

    def posterior(self, history: list[dict[str, Any]]) -> np.ndarray:
        """(K,) posterior over the profile grid."""
        return self.joint_posterior(history).sum(1)

    def joint_posterior(self, history: list[dict[str, Any]]) -> np.ndarray:
        """(K, B) posterior over profile x acceptance offset."""
        if not self.calendar:
            history = [_without_calendar(h) for h in history]
        logp = self.model.log_joint(
            history, self.log_prior, self.bias, self.delta_weight, self.offsets
        )
        w = np.exp(logp.astype(np.float64))
        return w / w.sum()

    def recommend(
        self, observation: dict[str, Any], history: list[dict[str, Any]]
    ) -> Recommendation:
        m = self.model
        joint = self.joint_posterior(history)
        post = joint.sum(1)
        belief = post @ m.grid
        # The posterior sd per axis: how sure the belief is (the page says "not sure yet"
        # above bridge.web.views.UNSURE_SD).
        sd = np.sqrt(np.maximum(post @ m.grid**2 - belief**2, 0.0))
        slot, meters = int(observation.get("slot", 0)) % 4, meters_of(observation)
        every = np.arange(len(ACTIONS))
        busy = booked(observation.get("free_minutes")) if self.calendar else 0.0
        scheduled = observation.get("active_event") if self.calendar else None
        z = m.accept_logits(
            every, np.array([context(slot, meters, busy, a == scheduled) for a in ACTIONS])
        )
        if self.bias is not None:
            z = z + self.bias[:, None]
        p = 1.0 / (1.0 + np.exp(-(z[:, :, None] + np.asarray(self.offsets))))  # (A, K, B)
        expected = np.einsum("akb,kb->a", p, joint)
        # Mutual information between the answer and the profile: what asking would teach.
        gain = _entropy(expected) - np.einsum("akb,kb->a", _entropy(p), joint)
        # Expected changes are linear in g, so their posterior mean and spread need only
        # the posterior mean and covariance of g.
        g_mean = post @ m.g
        g_cov = (m.g * post[:, None]).T @ m.g - np.outer(g_mean, g_mean)
        wd = np.einsum("d,adpm->amp", delta_context(slot), m.delta_w)  # (A, meters, prof)
        mean_delta = wd @ g_mean
        spread = np.maximum(np.einsum("amp,pq,amq->am", wd, g_cov, wd), 0.0)
        gain = gain + expected * 0.5 * np.log1p(spread / m.delta_sd**2).sum(1) * self.delta_weight
        known = np.array([observation.get(k) is not None for k in METERS])
        # How far each action is expected to leave a known meter below SAFE: steep enough
        # that when a meter is already low, what lifts it beats what pleases.
        shortfall = (np.maximum(0.0, SAFE - (meters + mean_delta)) * known).sum(1)
        weight = self.probe * max(0.0, 1.0 - len(history) / self.probe_horizon)
        score = expected + weight * gain - self.guard * shortfall
        allowed = set(available_actions(observation))
        if allowed:  # what the calendar has no window for is never recommended
            score = np.where([x in allowed for x in ACTIONS], score, -np.inf)
        a = int(np.argmax(score))
        rationale = _rationale(history, belief, ACTIONS[a], float(expected[a]), weight * gain[a])
        return Recommendation(
            ACTIONS[a],
            [round(float(b), 3) for b in belief],
            rationale,
            self.name,
            self.version,
            extra={
                "expected_accept": float(expected[a]),
                "belief_sd": [round(float(x), 3) for x in sd],
            },
        )


# Which answers speak to which axis, and what a low value is called.
_AXIS_WORDS = {
    0: ("introvert", "extrovert", ("SOCIALIZE", "FAMILY_TIME", "ME_TIME")),
    1: ("late chronotype", "morning person", ("DEEP_WORK", "LEARN", "EXERCISE")),
    2: ("work drains them", "work recharges them", ("DEEP_WORK", "ADMIN_WORK", "LEARN")),
}
_SLOT_WORDS = ("morning", "afternoon", "evening", "night")


def _rationale(
    history: list[dict[str, Any]], belief: np.ndarray, action: str, p: float, probing: float
) -> str:
    """One line: the strongest evidence, what it suggests, and why this action."""
    tail = f"{action} next (P(accept)≈{p:.2f})" + (
        ", also a useful probe" if probing > 0.05 else ""
    )
    if not history:
        return f"no answers yet; starting from the population prior; {tail}"
    axis = int(np.argmax(np.abs(belief - 0.5)))
    low, high, actions = _AXIS_WORDS[axis]
    counts = Counter(
        (h.get("slot"), h.get("action"), h.get("response"))
        for h in history
        if h.get("action") in actions and h.get("response") in ("accepted", "ignored")
    )
    best = None
    if counts:
        (slot, act, resp), n = max(counts.items(), key=lambda kv: kv[1])
        best = f"{_SLOT_WORDS[int(slot) % 4]} {act} {resp} {n}x"
    label = low if belief[axis] < 0.5 else high
    shape = " ".join(f"{k}={v:.2f}" for k, v in zip(AXES, belief, strict=True))
    evidence = f"{best} -> " if best else ""
    return f"{evidence}{label} likely ({shape}); {tail}"
