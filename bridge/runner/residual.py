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
"""

from __future__ import annotations

import numpy as np

N_SLOTS = 4
ITERATIONS = 6
MAX_STEP = 2.0  # logit units per Newton step: a tiny curvature cannot throw it far


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -30.0, 30.0)))


def fit_residual(
    actions: np.ndarray,
    slots: np.ndarray,
    accepted: np.ndarray,
    offset: np.ndarray,
    n_actions: int,
    tau: float,
    slot_tau: float = 0.0,
) -> np.ndarray:
    """(N_SLOTS, n_actions) logit corrections r[a] + u[s, a] at the posterior mode.

    `offset` is each item's logit under the population model (the correction explains
    only what that does not); items are (action index, slot 0-3, 1/0 accepted).
    """
    r = np.zeros(n_actions)
    u = np.zeros(N_SLOTS * n_actions)
    if len(actions) == 0 or (tau <= 0 and slot_tau <= 0):
        return u.reshape(N_SLOTS, n_actions)
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
    return r[None, :] + u.reshape(N_SLOTS, n_actions)


def corrected(p: np.ndarray, residual: np.ndarray) -> np.ndarray:
    """P(accept) `p` (any shape) with a logit correction of the same shape added."""
    q = np.clip(p, 1e-6, 1 - 1e-6)
    return _sigmoid(np.log(q / (1 - q)) + residual)
