"""A per-person correction of the acceptance model, on top of the population prior.

The bundled model reads a person through a 3-number profile and a yes-saying offset;
whatever else they do (a favourite action, one they never take, a habit in one slot) the
profile cannot express, and acceptance stops short of what someone who knew them would
reach. This adds a logit residual per action, r[a] ~ N(0, tau^2), and per slot and action
on top of it, u[s, a] ~ N(0, slot_tau^2) (so a slot's correction is shrunk towards the
action's), fitted by MAP over the person's answered items with the model's own
posterior-predictive logit of each item as a fixed offset. MAP of a logistic likelihood
with a Gaussian prior is a concave problem: a few coordinate Newton steps reach it.
tau = slot_tau = 0 is no correction at all (the runner then skips this entirely).

Whether this person needs a correction at all is itself uncertain: for someone the
population model reads well the fitted residual is noise, and acting on noise costs
acceptance (the winner's curse of a per-action estimate). So the correction is averaged
with none by the two models' evidence (Laplace approximation, each term's curvature taken
alone), under even prior odds: `weight` is P(this person needs a correction | answers).
"""

from __future__ import annotations

import numpy as np

N_SLOTS = 4
ITERATIONS = 6
MAX_STEP = 2.0  # logit units per Newton step: a tiny curvature cannot throw it far


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -30.0, 30.0)))


def _log_lik(y: np.ndarray, z: np.ndarray) -> float:
    return float(-(np.logaddexp(0.0, -z) * y + np.logaddexp(0.0, z) * (1 - y)).sum())


def fit_residual(
    actions: np.ndarray,
    slots: np.ndarray,
    accepted: np.ndarray,
    offset: np.ndarray,
    *,
    n_actions: int,
    tau: float,
    slot_tau: float = 0.0,
) -> tuple[np.ndarray, float]:
    """((N_SLOTS, n_actions) logit corrections r[a] + u[s, a] at the posterior mode,
    P(a correction is needed | answers)).

    `offset` is each item's logit under the population model (the correction explains
    only what that does not); items are (action index, slot 0-3, 1/0 accepted).
    """
    r = np.zeros(n_actions)
    u = np.zeros(N_SLOTS * n_actions)
    if len(actions) == 0 or (tau <= 0 and slot_tau <= 0):
        return u.reshape(N_SLOTS, n_actions), 0.0
    cell = (np.asarray(slots) % N_SLOTS) * n_actions + actions
    y = np.asarray(accepted, dtype=np.float64)
    o = np.asarray(offset, dtype=np.float64)
    for _ in range(ITERATIONS):
        if tau > 0:
            p = _sigmoid(o + r[actions] + u[cell])
            grad = np.bincount(actions, y - p, n_actions) - r / tau**2
            hess = np.bincount(actions, p * (1 - p), n_actions) + 1 / tau**2
            r += np.clip(grad / hess, -MAX_STEP, MAX_STEP)
        if slot_tau > 0:
            p = _sigmoid(o + r[actions] + u[cell])
            size = N_SLOTS * n_actions
            grad = np.bincount(cell, y - p, size) - u / slot_tau**2
            hess = np.bincount(cell, p * (1 - p), size) + 1 / slot_tau**2
            u += np.clip(grad / hess, -MAX_STEP, MAX_STEP)
    z = o + r[actions] + u[cell]
    p = _sigmoid(z)
    log_bf = _log_lik(y, z) - _log_lik(y, o)
    if tau > 0:
        curv = np.bincount(actions, p * (1 - p), n_actions)
        log_bf -= float((r**2 / (2 * tau**2) + 0.5 * np.log1p(tau**2 * curv)).sum())
    if slot_tau > 0:
        curv = np.bincount(cell, p * (1 - p), N_SLOTS * n_actions)
        log_bf -= float((u**2 / (2 * slot_tau**2) + 0.5 * np.log1p(slot_tau**2 * curv)).sum())
    weight = float(_sigmoid(np.array(log_bf)))
    return r[None, :] + u.reshape(N_SLOTS, n_actions), weight


def corrected(p: np.ndarray, residual: np.ndarray, weight: float = 1.0) -> np.ndarray:
    """P(accept) `p` (any shape) with a logit correction of the same shape added, averaged
    with the uncorrected one by `weight` (P(a correction is needed))."""
    q = np.clip(p, 1e-6, 1 - 1e-6)
    return weight * _sigmoid(np.log(q / (1 - q)) + residual) + (1 - weight) * p
