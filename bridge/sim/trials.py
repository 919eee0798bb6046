"""The bundled model's trials: features tried in simulation and not shipped (README).

The runtime runner (bridge.runner.bundled) runs only what the shipped model asks for and
refuses an artifact whose meta asks for one of these. They live on here, as subclasses of
the runtime's model, evidence and runner, so training (bridge.sim.tempering) and the
evaluation can still explore them:

- effect offsets (meta "effect_offset_sds", issue 22): each person gets an offset of their
  own on each action's effect on each meter, integrated out in closed form, against none,
  for a family whose neutral effects differ;
- the fit check (meta "fit_check_scales", issue 20, model version 7): the expert temper
  applies as far as no expert explains the person's meter changes to within its noise;
- the residual (meta "residual_tau" / "residual_slot_tau", issue 22): a per-person
  correction of the acceptance model (bridge.sim.residual).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from bridge.runner.bundled import (
    BundledModel,
    BundledRunner,
    Evidence,
    default_model_path,
    trials_asked,
)
from bridge.runner.features import RESPONSE_VALUE, item_context
from bridge.sim.residual import corrected, fit_residual
from mappings.actions import ACTIONS, METERS


class TrialModel(BundledModel):
    """The bundled model with every trial its meta asks for."""

    runs_trials: ClassVar[bool] = True

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.effect_sds = tuple(float(s) for s in self.meta.get("effect_offset_sds") or ())
        self.effect_prior = float(self.meta.get("effect_offset_prior", 0.5))
        # Scales a person's meter changes are checked at for whether an expert fits them
        # (TrialEvidence.fit_share); none: the expert temper applies to everyone.
        self.fit_scales = tuple(float(w) for w in self.meta.get("fit_check_scales") or ())
        if self.fit_scales and 1.0 not in self.fit_scales:
            raise ValueError(f"{path}: fit_check_scales {list(self.fit_scales)} must include 1")
        # The per-person correction's prior sd, chosen at training time; an artifact
        # without it gets none.
        self.residual_tau = float(self.meta.get("residual_tau", 0.0))
        self.residual_slot_tau = float(self.meta.get("residual_slot_tau", 0.0))

    def new_evidence(
        self, bias: np.ndarray | None, offsets: tuple[float, ...], keep: bool = True
    ) -> TrialEvidence:
        return TrialEvidence(self, bias, offsets, keep)

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
        """The runtime's posterior; with fit_check_scales, the tempered and the untempered
        posterior weighed by how well an expert fits the person's meter changes."""
        if evidence is None:
            evidence = self.new_evidence(bias, offsets, keep=False)
        # untempered: tempering by 1 leaves the runtime's posterior as it was
        logp = super().log_joint_experts(
            history,
            log_prior,
            bias,
            delta_weight=delta_weight,
            offsets=offsets,
            evidence=evidence,
            expert_temper=1.0,
        )
        temper = self.expert_temper if expert_temper is None else expert_temper
        tempered = self.tempered(logp, temper)
        if temper == 1.0 or not self.fit_scales or not evidence.count:
            return tempered
        assert isinstance(evidence, TrialEvidence)
        # Tempering is for people no expert fits; someone whose meter changes one expert
        # explains to within its own noise is read by plain Bayes, as a single-family
        # model would read them. How sure that is (the share of the posterior at the
        # unit scale) weighs the two posteriors.
        fit = np.clip(evidence.fit_share(logp, self.fit_scales), 1e-12, 1.0 - 1e-12)
        mix = np.logaddexp(
            np.log(fit) + _log_normalized(logp), np.log1p(-fit) + _log_normalized(tempered)
        )
        return mix - mix.max()


class TrialEvidence(Evidence):
    """The runtime's running sums, plus the same per action and meter (effect offsets)."""

    model: TrialModel

    def reset(self) -> None:
        super().reset()
        e, p = len(self.model.experts), self.model.g.shape[1]
        a, n = len(ACTIONS), len(METERS)
        self.group_prec, self.group_obs = np.zeros((e, a, n)), np.zeros((e, a, n))
        self.group_wd = np.zeros((e, a, n, p))

    def _sum_changes(
        self, acts: np.ndarray, usable: np.ndarray, obs: np.ndarray, wd: np.ndarray
    ) -> None:
        super()._sum_changes(acts, usable, obs, wd)
        if not self.model.effect_sds:
            return
        prec = usable[None] / self.model.delta_sd[:, acts] ** 2  # (E, n, meters)
        to_action = np.eye(len(ACTIONS))[acts].T  # (A, n): sums per action
        self.group_prec += to_action @ prec
        self.group_obs += to_action @ (prec * obs[None])
        e, n, k, p = wd.shape
        self.group_wd += (to_action @ (prec[..., None] * wd).reshape(e, n, -1)).reshape(e, -1, k, p)

    def fit_share(self, logp: np.ndarray, scales: tuple[float, ...]) -> float:
        """P(the meter changes are read at their expert's own spread) under the posterior
        `logp` (E, K, B): each (expert, profile)'s changes read at each of `scales` (one
        of them 1), N(mean, sd^2 / w), the scale's posterior under a flat prior, averaged.

        A two-sided check: changes spread wider than the expert says (a family it was not
        trained on) and narrower (quieter people than the expert's) both fail it.
        """
        post = np.exp(logp).sum(2)
        post /= post.sum()
        parts = np.stack(self._at_scales(self._changes_log_likelihood(), scales))
        parts -= parts.max(0)
        q = np.exp(parts)
        return float((post * q[scales.index(1.0)] / q.sum(0)).sum())

    def _readings(
        self, ll: np.ndarray, scales: tuple[float, ...]
    ) -> tuple[list[np.ndarray], np.ndarray]:
        parts = self._at_scales(ll, scales)
        if self.model.effect_sds:
            parts = self._with_offsets(parts, scales)
        return parts, self._part_weights(len(scales))

    def _part_weights(self, n_scales: int) -> np.ndarray:
        sds, q = self.model.effect_sds, self.model.effect_prior
        each = np.array([1.0 - q] + [q / len(sds)] * len(sds)) if sds else np.ones(1)
        return np.tile(each, n_scales) / n_scales

    def _with_offsets(self, parts: list[np.ndarray], scales: tuple[float, ...]) -> list[np.ndarray]:
        """Each scale's (E, K) log-likelihood, and the same with every action's effect on
        every meter shifted by an offset of its own for this person, N(0, sd^2) for each
        of the model's effect_sds, integrated out (a Gaussian: closed form).

        Per (action, meter) pair with precision sum P, and r = the precision-weighted sum
        of the changes less their expected values (linear in g), the offset adds
        w^2 r^2 / (2 (w P + 1 / sd^2)) - log(1 + sd^2 w P) / 2: again a quadratic form in g.
        """
        e, p = len(self.group_prec), self.group_wd.shape[-1]
        prec = self.group_prec.reshape(e, -1)
        obs = self.group_obs.reshape(e, -1)
        wd = self.group_wd.reshape(e, -1, p)
        g = self.model.g
        out = []
        for w, base in zip(scales, parts, strict=True):
            out.append(base)
            for sd in self.model.effect_sds:
                f = w**2 / (w * prec + 1.0 / sd**2)  # (E, pairs)
                const = 0.5 * (f * obs**2).sum(1) - 0.5 * np.log1p(sd**2 * w * prec).sum(1)
                lin = np.einsum("eg,eg,egp->ep", f, obs, wd)
                quad = (wd * f[..., None]).transpose(0, 2, 1) @ wd
                gain = const[:, None] - lin @ g.T + 0.5 * self._over_grid(quad)
                out.append(base + gain)
        return out


class TrialRunner(BundledRunner):
    """The bundled runner on a TrialModel, with the per-person correction (residual)."""

    model: TrialModel

    def __init__(
        self,
        model: str | None = None,
        *,
        residual_tau: float | None = None,
        residual_slot_tau: float | None = None,
        **options: Any,
    ) -> None:
        super().__init__(load_trial_model(model), **options)
        self.tau = self.model.residual_tau if residual_tau is None else residual_tau
        slot_tau = residual_slot_tau
        self.slot_tau = self.model.residual_slot_tau if slot_tau is None else slot_tau

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
        if self.tau <= 0 and self.slot_tau <= 0:
            return expected
        # Information gain stays the population model's: the correction changes what
        # the person is expected to accept, not what an answer teaches about them.
        residual, needed = self._residual(live, full, g_mean, g_cov)
        return corrected(expected, residual[slot], needed)

    def _residual(
        self, live: np.ndarray, full: np.ndarray, g_mean: np.ndarray, g_cov: np.ndarray
    ) -> tuple[np.ndarray, float]:
        """(4, A) logit corrections for this person and P(they need one)
        (bridge.sim.residual), with every answered item's posterior-predictive logit
        under the population model as offset."""
        m, items = self.model, self.evidence.items  # the answers read, as the evidence read them
        if not items:
            return np.zeros((4, len(ACTIONS))), 0.0
        acts = np.array([ACTIONS.index(h["action"]) for h in items])
        ctx = np.array([item_context(h) for h in items])
        w_e = full.sum((1, 2))
        off = np.asarray(self.offsets, dtype=np.float64)
        b_e = full.sum(1) / w_e[:, None]  # (E, B): the yes-saying offset per expert
        b_mean = b_e @ off
        b_var = np.maximum(b_e @ off**2 - b_mean**2, 0.0)
        wi = np.einsum("nc,encp->enp", ctx, m.accept_w[live][:, acts])  # (E, n, P)
        mean_e = np.einsum("enp,ep->en", wi, g_mean) + b_mean[:, None]
        var_e = np.einsum("enp,epq,enq->en", wi, g_cov, wi) + b_var[:, None]
        mean = w_e @ mean_e
        var = w_e @ (var_e + (mean_e - mean) ** 2)
        if self.bias is not None:
            mean = mean + self.bias[acts]
        # the logit of the posterior-predictive P(accept) (probit approximation)
        offset = mean / np.sqrt(1.0 + np.pi * var / 8.0)
        slots = np.array([int(h["slot"]) % 4 for h in items])
        y = np.array([RESPONSE_VALUE[h["response"]] for h in items])
        return fit_residual(
            acts, slots, y, offset, n_actions=len(ACTIONS), tau=self.tau, slot_tau=self.slot_tau
        )


def _log_normalized(logp: np.ndarray) -> np.ndarray:
    top = logp.max()
    return logp - top - np.log(np.exp(logp - top).sum())


@lru_cache(maxsize=4)
def load_trial_model(path: str | None = None) -> TrialModel:
    return TrialModel(Path(path) if path else default_model_path())


def bundled_runner(model: str | None = None, **options: Any) -> BundledRunner:
    """The runtime runner, or for an artifact that asks for a trial the one that runs it:
    what evaluating an artifact reads it with."""
    if trials_asked(load_trial_model(model).meta):
        return TrialRunner(model, **options)
    return BundledRunner(model, **options)
