"""A Bayesian logistic model updated one answer at a time: the per-person part of the
transfer runner (bridge.runner.transfer) and of the HeartSteps replay (bridge.sim.heartsteps).

The posterior is Gaussian: each answer is one Laplace step (a Newton step from the current
mean, the covariance by Sherman-Morrison), and a prediction integrates the posterior's
spread with the probit approximation. A known linear-Gaussian observation (a meter change)
is an exact Kalman step on the same posterior.
"""

from __future__ import annotations

import math

import numpy as np

LOGIT_CAP = 35.0
MIN_CURVATURE = 1e-4  # a confident wrong answer still moves the posterior a little


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(z, LOGIT_CAP), -LOGIT_CAP)))


class OnlineLogistic:
    """Bayesian logistic regression updated one answer at a time (a Laplace step per
    answer), predicting with the probit approximation of its posterior's spread.

    `sd` is one prior sd for every weight, or `cov` a full prior covariance. `offset` in
    `predict`/`update` is a known part of the logit (the population's, in the transfer
    runner), so the weights are the person's own effects.
    """

    def __init__(self, mean: np.ndarray, sd: float = 1.0, cov: np.ndarray | None = None) -> None:
        self.mean = np.asarray(mean, dtype=float).copy()
        self.cov = (
            np.eye(len(self.mean)) * sd**2 if cov is None else np.array(cov, dtype=float).copy()
        )

    def logit(self, x: np.ndarray, offset: float = 0.0) -> tuple[float, float]:
        """The logit's posterior mean and variance at x."""
        return float(x @ self.mean) + offset, max(float(x @ self.cov @ x), 0.0)

    def predict(self, x: np.ndarray, offset: float = 0.0) -> float:
        mean, var = self.logit(x, offset)
        return sigmoid(mean / math.sqrt(1.0 + math.pi * var / 8.0))

    def update(self, x: np.ndarray, y: int, offset: float = 0.0) -> None:
        if not np.all(np.isfinite(x)) or not math.isfinite(offset):
            return  # nothing to learn from a broken feature vector, and nothing to poison
        p = sigmoid(float(x @ self.mean) + offset)
        w = max(p * (1.0 - p), MIN_CURVATURE)
        cx = self.cov @ x
        # Sherman-Morrison: (S^-1 + w x x')^-1
        self.cov = self.cov - np.outer(cx, cx) * (w / (1.0 + w * float(x @ cx)))
        self.mean = self.mean + self.cov @ x * (y - p)

    def observe(self, h: np.ndarray, y: np.ndarray, var: np.ndarray) -> None:
        """Kalman step for observations y ~ N(h @ weights, diag(var)), h (n, d)."""
        ok = np.all(np.isfinite(h), axis=1) & np.isfinite(y) & (var > 0)
        if not ok.any():
            return
        h, y, var = h[ok], y[ok], var[ok]
        ch = self.cov @ h.T  # (d, n)
        s = h @ ch + np.diag(var)
        gain = np.linalg.solve(s, ch.T).T  # (d, n)
        self.mean = self.mean + gain @ (y - h @ self.mean)
        self.cov = self.cov - gain @ ch.T
        self.cov = 0.5 * (self.cov + self.cov.T)


MAX_STEP = 5.0  # a Newton step longer than this is shortened: nothing runs off to infinity


def laplace(
    prior_mean: np.ndarray,
    prior_cov: np.ndarray,
    answers: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    gaussian: tuple[np.ndarray, np.ndarray] | None = None,
    steps: int = 8,
) -> OnlineLogistic:
    """The Laplace posterior of a logistic model given all answers at once.

    `answers` = (z (n, d), y (n,), offset (n,), weight (n,)): each answer's feature row,
    outcome, known logit part and weight (an older answer may count less). `gaussian` =
    (precision (d, d), information (d,)) of linear-Gaussian observations, read exactly.
    The same posterior OnlineLogistic reaches one answer at a time, up to the order: here
    every answer is linearized at the final mean. Rows with a non-finite value are skipped.
    """
    z, y, offset, weight = answers
    ok = np.all(np.isfinite(z), axis=1) & np.isfinite(offset) & np.isfinite(weight)
    z, y, offset, weight = z[ok], y[ok], offset[ok], weight[ok]
    prior_precision = np.linalg.inv(prior_cov)
    precision, info = prior_precision.copy(), prior_precision @ prior_mean
    if (
        gaussian is not None
        and np.all(np.isfinite(gaussian[0]))
        and np.all(np.isfinite(gaussian[1]))
    ):
        precision, info = precision + gaussian[0], info + gaussian[1]
    mean = np.linalg.solve(precision, info)
    hessian = precision
    for _ in range(steps if len(y) else 0):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ mean + offset, -LOGIT_CAP, LOGIT_CAP)))
        curvature = weight * np.maximum(p * (1.0 - p), MIN_CURVATURE)
        hessian = precision + (z * curvature[:, None]).T @ z
        grad = info - precision @ mean + z.T @ (weight * (y - p))
        step = np.linalg.solve(hessian, grad)
        size = float(np.abs(step).max())
        if size > MAX_STEP:
            step *= MAX_STEP / size
        mean = mean + step
        if size < 1e-5:
            break
    if len(y):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ mean + offset, -LOGIT_CAP, LOGIT_CAP)))
        curvature = weight * np.maximum(p * (1.0 - p), MIN_CURVATURE)
        hessian = precision + (z * curvature[:, None]).T @ z
    cov = np.linalg.inv(hessian)
    return OnlineLogistic(mean, cov=0.5 * (cov + cov.T))
