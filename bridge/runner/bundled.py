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
from copy import deepcopy
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from bridge.errors import InputError
from bridge.runner.base import STATED, Recommendation, available_actions
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
from bridge.runner.recalibrate import SD as RECALIBRATE_SD
from bridge.runner.recalibrate import recalibrated
from mappings.actions import ACTIONS, METERS

GRID_POINTS = 9
IN_RANGE = (0.1, 0.9)  # where the training profiles lived; outside is allowed, less likely
OUTSIDE_PRIOR = 0.35
SAFE = 0.2  # never recommend what is expected to leave a meter below this
GUARD = 10.0  # score lost per unit a meter is expected to end below SAFE
# Tempers the meter-change evidence (real meters are noisier than sim). A model trained
# since issue 22 carries its own value in meta["delta_weight"], chosen at training time on
# the training families' held-in people; this is the value for older artifacts.
# Since model version 5 the weight is not one number for everyone: each person's meter
# changes are read as N(mean, sd^2 / w) with w unknown among meta["meter_scales"], a
# proper density, and w integrated out per person. Someone an expert fits is read at its
# sharp scale (a training family's own people, as a single-family model reads them) and
# anyone else at the broad one (what transfer to an unknown family needs). Issue 20.
DELTA_WEIGHT = 0.5
# People differ in how often they say yes at all: a per-person logit offset on every
# acceptance, integrated out over this grid under a N(0, OFFSET_SD) prior, so a yes-sayer
# is not mistaken for a profile. (0,) turns it off.
OFFSETS = (-1.0, -0.5, 0.0, 0.5, 1.0)
OFFSET_SD = 0.6
PROBE = 0.6  # weight of information gain over expected acceptance at the first step
PROBE_HORIZON = 16  # ... falling to zero over this many answers
AXES = ("S", "M", "W")
DROP = 1e-4  # experts below this share of the most likely one's weight are left out
PRUNE = 1e-6  # profiles below this share of the most likely one's are left out of a choice
# Meta keys of features tried and not shipped (README), and the trial each belongs to: only
# bridge.sim.trials runs them, so an artifact asking for one is refused here rather than
# read as if it did not.
TRIAL_KEYS = {
    "effect_offset_sds": "effect offsets",
    "fit_check_scales": "fit check",
    "residual_tau": "residual",
    "residual_slot_tau": "residual",
}


def trials_asked(meta: dict[str, Any]) -> list[str]:
    """The trials an artifact's meta switches on (a zero or empty value is none)."""
    return sorted({name for key, name in TRIAL_KEYS.items() if meta.get(key)})


def default_model_path() -> Path:
    return Path(str(files("bridge.runner").joinpath("models/bundled.npz")))


class BundledModel:
    """The trained arrays plus the profile grid, loaded from NPZ without pickle.

    Since model version 4 every array has a leading expert axis: one acceptance model
    and one meter-change model per training family (bridge.sim.train). A person's
    history is scored under every expert and the expert is integrated out like the
    profile, so a person of a training family is read by their family's expert and a
    person of another family by whichever experts explain them. An older artifact (no
    expert axis) is one expert.
    """

    runs_trials: ClassVar[bool] = False  # bridge.sim.trials.TrialModel: True

    def __init__(self, path: Path) -> None:
        _single_threaded_blas()
        with np.load(path, allow_pickle=False) as data:
            self.meta: dict[str, Any] = json.loads(str(data["meta"]))
            accept_w = data["accept_w"].astype(np.float64)
            delta_w = data["delta_w"].astype(np.float64)
            delta_sd = data["delta_sd"].astype(np.float64)
        if accept_w.ndim == 3:  # before version 4: a single model
            accept_w, delta_w, delta_sd = accept_w[None], delta_w[None], delta_sd[None]
        if accept_w.shape[2] < N_CTX:  # a model from before the calendar features
            pad = N_CTX - accept_w.shape[2]
            accept_w = np.pad(accept_w, ((0, 0), (0, 0), (0, pad), (0, 0)))
        self.accept_w = accept_w  # (E, A, ctx, prof)
        self.delta_w = delta_w  # (E, A, dctx, prof, meters)
        self.delta_sd = delta_sd  # (E, A, meters)
        names = self.meta.get("experts") or ["+".join(self.meta.get("families", ["rhythm"]))]
        self.experts: list[str] = list(names)
        if len(self.experts) != len(accept_w):
            raise ValueError(f"{path}: {len(accept_w)} experts but meta names {names}")
        prior = np.asarray(self.meta.get("expert_prior") or np.ones(len(self.experts)), float)
        self.log_expert_prior = np.log(prior / prior.sum())
        axis = np.linspace(0.0, 1.0, GRID_POINTS)
        self.grid = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), -1).reshape(-1, 3)
        self.g = profile_features(self.grid)  # (K, prof)
        self.g32 = self.g.astype(np.float32)
        # g g^T flattened: a quadratic form in g over the whole grid is one product
        self.gg = np.einsum("kp,kq->kpq", self.g, self.g).reshape(len(self.g), -1)
        inside = (self.grid >= IN_RANGE[0] - 1e-9) & (self.grid <= IN_RANGE[1] + 1e-9)
        self.log_prior = np.log(np.where(inside, 1.0, OUTSIDE_PRIOR)).sum(1)
        self.version = f"{self.meta['model_version']}-seed{self.meta['seed']}"
        self.delta_weight = float(self.meta.get("delta_weight", DELTA_WEIGHT))
        self.expert_temper = float(self.meta.get("expert_temper", 1.0))
        self.meter_scales = tuple(float(w) for w in self.meta.get("meter_scales") or ())
        asked = trials_asked(self.meta)
        if asked and not self.runs_trials:
            names = " and ".join(f"'{a}'" for a in asked)
            raise InputError(
                f"{path}: asks for the {names} trial{'s' if len(asked) > 1 else ''}, which "
                "only bridge.sim runs; retrain with `rhythm-bridge train-model`"
            )

    def new_evidence(
        self, bias: np.ndarray | None, offsets: tuple[float, ...], keep: bool = True
    ) -> Evidence:
        return Evidence(self, bias, offsets, keep)

    def accept_logits(
        self,
        actions: np.ndarray,
        ctx: np.ndarray,
        experts: np.ndarray | None = None,
        profiles: np.ndarray | None = None,
    ) -> np.ndarray:
        """(n,) actions in (n, ctx) contexts -> (E, n, K) logits per expert and profile."""
        aw = self.accept_w if experts is None else self.accept_w[experts]
        g32 = self.g32 if profiles is None else self.g32[profiles]
        w = np.einsum("nc,encp->enp", ctx, aw[:, actions])  # (E, n, prof)
        return w.astype(np.float32) @ g32.T

    def log_joint_experts(
        self,
        history: list[dict[str, Any]],
        log_prior: np.ndarray | None = None,
        bias: np.ndarray | None = None,
        *,
        delta_weight: float | None = None,
        offsets: tuple[float, ...] = (0.0,),
        evidence: Evidence | None = None,
        expert_temper: float | None = None,
    ) -> np.ndarray:
        """(E, K, B) log posterior over expert x profile x acceptance offset, max 0.

        `evidence` (the runner's, for the same bias and offsets) keeps the sums of the
        answers it has already read, so only new answers cost anything.
        """
        if evidence is None:
            evidence = self.new_evidence(bias, offsets, keep=False)
        evidence.update(history)
        off = np.asarray(offsets, dtype=np.float64)
        logp = (self.log_prior if log_prior is None else log_prior)[None, :, None] - 0.5 * (
            off / OFFSET_SD
        ) ** 2
        logp = logp + self.log_expert_prior[:, None, None]
        weight = self.delta_weight if delta_weight is None else delta_weight
        logp = logp + evidence.log_likelihood(weight)
        temper = self.expert_temper if expert_temper is None else expert_temper
        logp = logp - logp.max()
        return self.tempered(logp, temper)

    def tempered(self, logp: np.ndarray, temper: float) -> np.ndarray:
        """(E, K, B) untempered log posterior -> each expert's weight from its evidence to
        the power `temper`, the profile and offset given the expert as before; max 0.

        No expert is the family of someone unlike every training family: tempered, the
        weight stays spread over the experts that explain them about equally, instead of
        all on one.
        """
        if temper == 1.0 or len(logp) < 2:
            return logp
        top = logp.max((1, 2), keepdims=True)  # per expert: none underflows to -inf
        evidence_e = np.log(np.exp(logp - top).sum((1, 2))) + top.ravel()
        evidence_e = evidence_e - self.log_expert_prior
        logp = logp - ((1.0 - temper) * evidence_e)[:, None, None]
        return logp - logp.max()


class Evidence:
    """What a history says about (expert, profile, offset), as running sums.

    The log-likelihood is a sum over answers, in any order, so a history that only
    gained answers (at the end, or a late answer in between) needs only the new ones
    read: O(new answers) per recommendation instead of O(history). Anything else (an
    answer changed or gone) starts over from the whole history.
    """

    def __init__(
        self,
        model: BundledModel,
        bias: np.ndarray | None,
        offsets: tuple[float, ...],
        keep: bool = True,
    ) -> None:
        # keep=False: read once and forget (no copies of the answers kept)
        self.model, self.bias, self.keep = model, bias, keep
        self.offsets = np.asarray(offsets, dtype=np.float32)
        self.reset()

    def reset(self) -> None:
        e, k, p = len(self.model.experts), len(self.model.grid), self.model.g.shape[1]
        self.items: list[dict[str, Any]] = []
        self.accept = np.zeros((e, k, len(self.offsets)))
        self.quad = np.zeros((e, p, p))
        self.lin = np.zeros((e, p))
        self.const = np.zeros(e)
        self.resid = np.zeros(e)  # -sum prec obs^2 / 2: the part of `const` a scale scales
        self.count = 0.0  # meter changes read

    def update(self, history: list[dict[str, Any]]) -> None:
        items = [
            h for h in history if h.get("action") in ACTIONS and h.get("response") in RESPONSE_VALUE
        ]
        if not self.keep:
            self.reset()
            self._add(items)
            return
        kept: list[dict[str, Any]] = []
        new: list[dict[str, Any]] = []
        j = 0
        for h in items:  # the old answers must appear, unchanged and in order, among these
            if j < len(self.items) and h == self.items[j]:
                kept.append(self.items[j])
                j += 1
            else:
                new.append(h)
                kept.append(_snapshot(h))  # a caller may fill in a response later, in place
        if j < len(self.items):
            self.reset()
            new, kept = items, [_snapshot(h) for h in items]
        self._add(new)
        self.items = kept

    def _add(self, items: list[dict[str, Any]]) -> None:
        if not items:
            return
        m = self.model
        acts = np.array([ACTIONS.index(h["action"]) for h in items])
        y = np.array([RESPONSE_VALUE[h["response"]] for h in items])
        ctx = np.array([item_context(h) for h in items])
        z = m.accept_logits(acts, ctx)  # (E, n, K)
        if self.bias is not None:
            z = z + self.bias[acts][None, :, None].astype(np.float32)
        # log sigmoid(z) if accepted, log sigmoid(-z) if not; stable for large |z|. One
        # (E, n, K) array per offset, worked on in place; the sign and the clip (offsets
        # are within +-1) are applied once for all offsets.
        flip = np.where(y == 1.0, -1.0, 1.0).astype(np.float32)[None, :, None]
        np.multiply(z, flip, out=z)  # -signed
        np.clip(z, -29.0, 29.0, out=z)
        x = np.empty_like(z)
        for j, b in enumerate(self.offsets):
            np.add(z, flip * b, out=x)
            np.exp(x, out=x)
            np.log1p(x, out=x)
            self.accept[:, :, j] -= x.sum(1)
        acc = [i for i, h in enumerate(items) if y[i] == 1.0 and h.get("meter_deltas")]
        if not acc:
            return
        before = np.array([meters_of(items[i].get("meters") or {}) for i in acc])
        raw = [items[i]["meter_deltas"] for i in acc]
        obs = np.array([[np.nan if d.get(k) is None else d[k] for k in METERS] for d in raw])
        after = before + obs
        # Unknown meters and changes cut off at 0 or 1 carry no evidence.
        usable = ~np.isnan(obs) & (after > 0.005) & (after < 0.995)
        # Each expected change is linear in g(profile), so the Gaussian log-likelihood
        # summed over items is a quadratic form in g: O(items) work, not O(items x grid).
        wd = np.einsum(
            "nd,endpm->enmp",
            np.array([delta_context(items[i]["slot"]) for i in acc]),
            m.delta_w[:, acts[acc]],
        )  # (E, n, meters, prof)
        self._sum_changes(acts[acc], usable, np.nan_to_num(obs), wd)

    def _sum_changes(
        self, acts: np.ndarray, usable: np.ndarray, obs: np.ndarray, wd: np.ndarray
    ) -> None:
        """Fold accepted answers' meter changes into the running sums: actions (n,), which
        changes count (n, meters), the changes (0 where unknown), and the expected
        changes' weights on g (E, n, meters, prof)."""
        m = self.model
        prec = usable[None] / m.delta_sd[:, acts] ** 2  # (E, n, meters)
        self.quad += np.einsum("enm,enmp,enmq->epq", prec, wd, wd)
        self.lin += np.einsum("enm,nm,enmp->ep", prec, obs, wd)
        # What does not depend on the profile still differs between experts (each has
        # its own spread): without it the experts could not be compared.
        resid = np.einsum("enm,nm->e", prec, obs**2) / 2
        self.resid -= resid
        self.count += float(usable.sum())
        self.const -= resid + np.einsum("nm,enm->e", usable, np.log(m.delta_sd[:, acts]))

    def _changes_log_likelihood(self) -> np.ndarray:
        """(E, K): the meter changes' log-likelihood at each expert's own spread."""
        return self.const[:, None] + self.lin @ self.model.g.T - 0.5 * self._over_grid(self.quad)

    def log_likelihood(self, delta_weight: float) -> np.ndarray:
        """(E, K, B): the answers' log-likelihood; the meter changes' tempered by weight, or
        with the model's meter scales, read at each scale and the scale integrated out."""
        ll = self._changes_log_likelihood()
        scales = self.model.meter_scales
        if not scales:
            return self.accept + (delta_weight * ll)[:, :, None]
        readings, weights = self._readings(ll, scales)
        parts = np.stack(readings)
        top = parts.max(0)
        mix = np.tensordot(weights, np.exp(parts - top), 1)
        return self.accept + (top + np.log(mix))[:, :, None]

    def _readings(
        self, ll: np.ndarray, scales: tuple[float, ...]
    ) -> tuple[list[np.ndarray], np.ndarray]:
        """Each (E, K) way the changes may be read and its prior weight: one per scale."""
        return self._at_scales(ll, scales), np.full(len(scales), 1.0 / len(scales))

    def _at_scales(self, ll: np.ndarray, scales: tuple[float, ...]) -> list[np.ndarray]:
        """(E, K) per scale w: the changes' log-likelihood `ll` read as N(mean, sd^2 / w)."""
        norm = (self.const - self.resid)[:, None]  # -sum log sd: what a scale does not scale
        return [(ll - norm) * w + norm + 0.5 * self.count * np.log(w) for w in scales]

    def _over_grid(self, quad: np.ndarray) -> np.ndarray:
        """(E, K): g^T quad[e] g for every expert and profile of the grid."""
        return quad.reshape(len(quad), -1) @ self.model.gg.T


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


def _snapshot(value: Any) -> Any:
    """A copy of a history item that later changes to it cannot reach: dicts and lists
    copied, immutable scalars shared (deepcopy took half a fresh runner's time)."""
    if isinstance(value, dict):
        return {k: _snapshot(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_snapshot(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return deepcopy(value)


def _bernoulli(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(accept) and the answer's entropy from logits `x` (float32, overwritten).

    With t = exp(-x) and p = 1 / (1 + t): 1 - p = t p and H(p) = -log p + x (1 - p).
    The logits are clipped at +-30 (float32 exp overflows near 88; beyond 30 p and H are
    exact to float32 precision anyway). In place: this is the runner's largest array.
    """
    np.clip(x, -30.0, 30.0, out=x)
    t = np.negative(x)
    np.exp(t, out=t)
    p = np.add(t, 1.0, dtype=np.float32)
    np.reciprocal(p, out=p)
    np.multiply(t, p, out=t)  # 1 - p
    h = np.log(p)
    np.negative(h, out=h)
    np.multiply(x, t, out=x)
    np.add(h, x, out=h)
    return p, h


def _entropy(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-9, 1 - 1e-9)
    return -(p * np.log(p) + (1 - p) * np.log(1 - p))


@dataclass(frozen=True)
class Choosing:
    """How a recommendation weighs teaching against pleasing and guards the meters."""

    probe: float = PROBE
    probe_horizon: int = PROBE_HORIZON
    guard: float = GUARD


@dataclass(frozen=True, slots=True)
class _View:
    """What `recommend` reads of the posterior after a history (see `_view`)."""

    full: np.ndarray  # (E, K, B) over live experts and kept profiles
    live: np.ndarray
    keep: np.ndarray
    belief: np.ndarray
    sd: np.ndarray
    slot: int
    meters: np.ndarray
    h: np.ndarray  # (E, A, K, B) entropy of each answer
    full32: np.ndarray
    expected: np.ndarray  # (A,) P(accept)


class BundledRunner:
    name = "bundled"

    def __init__(
        self,
        model: str | BundledModel | None = None,
        adapter: str | dict[str, Any] | None = None,
        *,
        choosing: Choosing = Choosing(),
        calendar: bool = True,
        delta_weight: float | None = None,
        offsets: tuple[float, ...] | None = None,
        expert_temper: float | None = None,
        recalibrate: float = RECALIBRATE_SD,
    ) -> None:
        # a loaded model: bridge.sim.trials hands in one that runs trials
        self.model = model if isinstance(model, BundledModel) else load_model(model)
        self.offsets = OFFSETS if offsets is None else offsets
        # None: the model's own tempering; a value: only for choosing one at training time
        self.delta_weight = self.model.delta_weight if delta_weight is None else delta_weight
        self.expert_temper = self.model.expert_temper if expert_temper is None else expert_temper
        self.calendar = calendar  # False: ignore how booked a slot is (for comparison)
        # prior sd of the person's correction of the stated P(accept); 0 turns it off
        self.recalibrate = recalibrate
        self.version = self.model.version
        self.probe, self.probe_horizon = choosing.probe, choosing.probe_horizon
        self.guard = choosing.guard
        self.log_prior: np.ndarray | None = None
        self.bias: np.ndarray | None = None
        self.history_since = None  # with an adapter: it already holds the older answers
        if adapter:
            from bridge.runner.adapter import load_adapter

            fitted = load_adapter(adapter, self.model)
            self.log_prior, self.bias = fitted.log_prior, fitted.action_bias
            self.history_since = fitted.through
        self.evidence = self.model.new_evidence(self.bias, self.offsets)

    def posterior(self, history: list[dict[str, Any]]) -> np.ndarray:
        """(K,) posterior over the profile grid."""
        return self.expert_posterior(history).sum((0, 2))

    def joint_posterior(self, history: list[dict[str, Any]]) -> np.ndarray:
        """(K, B) posterior over profile x acceptance offset."""
        return self.expert_posterior(history).sum(0)

    def expert_posterior(self, history: list[dict[str, Any]]) -> np.ndarray:
        """(E, K, B) posterior over expert x profile x acceptance offset."""
        if not self.calendar:
            history = [_without_calendar(h) for h in history]
        logp = self.model.log_joint_experts(
            history,
            self.log_prior,
            self.bias,
            delta_weight=self.delta_weight,
            offsets=self.offsets,
            evidence=self.evidence,
            expert_temper=self.expert_temper,
        )
        w = np.exp(logp)
        return w / w.sum()

    def _view(self, observation: dict[str, Any], history: list[dict[str, Any]]) -> _View:
        """The posterior as choosing and predicting read it, and P(accept) per action."""
        m = self.model
        full = self.expert_posterior(history)
        by_expert = full.sum((1, 2))
        # Experts the history has all but ruled out cost time and change nothing.
        live = np.flatnonzero(by_expert >= DROP * by_expert.max())
        full = full[live] / by_expert[live].sum()
        joint = full.sum(0)  # (K, B)
        post = joint.sum(1)
        belief = post @ m.grid
        # The posterior sd per axis: how sure the belief is (the page says "not sure yet"
        # above bridge.web.views.UNSURE_SD).
        sd = np.sqrt(np.maximum(post @ m.grid**2 - belief**2, 0.0))
        # Choosing needs only the profiles the answers have not all but ruled out: with
        # tempered experts every expert stays in play, and this keeps a choice within the
        # latency budget (the mass left out is below 729 x PRUNE of the likeliest's).
        keep = np.flatnonzero(post >= PRUNE * post.max())
        full = full[:, keep]
        full /= full.sum()
        slot, meters = int(observation.get("slot", 0)) % 4, meters_of(observation)
        every = np.arange(len(ACTIONS))
        busy = booked(observation.get("free_minutes")) if self.calendar else 0.0
        scheduled = observation.get("active_event") if self.calendar else None
        z = m.accept_logits(
            every,
            np.array([context(slot, meters, busy, a == scheduled) for a in ACTIONS]),
            live,
            keep,
        )  # (E, A, K)
        if self.bias is not None:
            z = z + self.bias[None, :, None]
        off = np.asarray(self.offsets, dtype=np.float32)
        p, h = _bernoulli(z.astype(np.float32)[..., None] + off)  # (E, A, K, B)
        full32 = full.astype(np.float32)
        expected = np.einsum("eakb,ekb->a", p, full32).astype(np.float64)
        return _View(full, live, keep, belief, sd, slot, meters, h, full32, expected)

    def predict(
        self, observation: dict[str, Any], history: list[dict[str, Any]], *, corrected: bool = True
    ) -> np.ndarray:
        """(A,) P(accept) of every action now, what `recommend` states as `expected_accept`
        for the one it chooses (bridge.sim.heartsteps replays it): the posterior's own,
        `corrected` for the person (bridge.runner.recalibrate) unless asked not to."""
        expected = self._view(observation, history).expected
        return recalibrated(expected, history, self.recalibrate) if corrected else expected

    def recommend(
        self, observation: dict[str, Any], history: list[dict[str, Any]]
    ) -> Recommendation:
        m = self.model
        v = self._view(observation, history)
        full, live, keep, belief, sd = v.full, v.live, v.keep, v.belief, v.sd
        slot, meters, h, full32, expected = v.slot, v.meters, v.h, v.full32, v.expected
        g = m.g[keep]
        # Mutual information between the answer and (expert, profile, offset): what
        # asking would teach.
        gain = _entropy(expected) - np.einsum("eakb,ekb->a", h, full32)
        # Expected changes are linear in g, so their posterior mean and spread need only
        # each expert's posterior mean and covariance of g (a mixture over experts).
        w_e = full.sum((1, 2))  # (E,)
        post_e = full.sum(2) / w_e[:, None]  # (E, K), each sums to 1
        g_mean = post_e @ g  # (E, prof)
        g_cov = np.einsum("ek,kp,kq->epq", post_e, g, g) - np.einsum("ep,eq->epq", g_mean, g_mean)
        wd = np.einsum("d,eadpm->eamp", delta_context(slot), m.delta_w[live])  # (E, A, M, P)
        mean_e = np.einsum("eamp,ep->eam", wd, g_mean)
        mean_delta = np.einsum("e,eam->am", w_e, mean_e)
        spread_e = np.maximum(np.einsum("eamp,epq,eamq->eam", wd, g_cov, wd), 0.0)
        spread = np.einsum("e,eam->am", w_e, spread_e + (mean_e - mean_delta) ** 2)
        sd2 = np.einsum("e,eam->am", w_e, m.delta_sd[live] ** 2)
        gain = gain + expected * 0.5 * np.log1p(spread / sd2).sum(1) * self.delta_weight
        expected = self._expected_accept(
            expected, slot, live=live, full=full, g_mean=g_mean, g_cov=g_cov
        )
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
        # The person's correction changes what is said of the choice, never the choice.
        stated = float(recalibrated(expected[a : a + 1], history, self.recalibrate)[0])
        rationale = _rationale(history, belief, ACTIONS[a], stated, weight * gain[a])
        return Recommendation(
            ACTIONS[a],
            [round(float(b), 3) for b in belief],
            rationale,
            self.name,
            self.version,
            extra={
                "expected_accept": stated,
                STATED: float(expected[a]),  # what the correction is fitted on, later
                "belief_sd": [round(float(x), 3) for x in sd],
            },
        )

    def _expected_accept(
        self,
        expected: np.ndarray,
        slot: int,
        *,
        live: np.ndarray,
        full: np.ndarray,
        g_mean: np.ndarray,
        g_cov: np.ndarray,
    ) -> np.ndarray:
        """(A,) P(accept) the choice weighs: the posterior's own here. The posterior's
        parts are passed for bridge.sim.trials, which corrects it per person."""
        return expected


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
        best = f"{_SLOT_WORDS[int(slot or 0) % 4]} {act} {resp} {n}x"
    label = low if belief[axis] < 0.5 else high
    shape = " ".join(f"{k}={v:.2f}" for k, v in zip(AXES, belief, strict=True))
    evidence = f"{best} -> " if best else ""
    return f"{evidence}{label} likely ({shape}); {tail}"
