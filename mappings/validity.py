"""How closely a meter follows what the person says: within-person Spearman rho with a
bootstrap interval, and meter weights fitted to one person, kept only where a forward
evaluation on that person's own history says they track the check-ins better.

Pure numpy (no I/O); `bridge/cycle/validity.py` builds the paired table from the store.

Rules, documented in docs/guides/validity.md:
- fewer than MIN_DAYS paired days: no number, only the count;
- the interval is the 2.5th-97.5th percentile of rho over BOOTSTRAP resamples of the
  paired days (seeded: the same history gives the same interval);
- weights are fitted once a meter has FIT_MIN_DAYS paired days; the fit is a ridge
  regression of the check-in on the inputs' scores, pulled toward the bundled weights
  (strength RIDGE_DAYS days of evidence), negative weights set to 0; it is evaluated
  forward in time (fit on the days before, score the next EVAL_STEP_DAYS, from
  FIT_FIRST_DAYS on) and used only if its forward rho beats the bundled weights' on the
  same days.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

MIN_DAYS = 14
BOOTSTRAP = 1000
FIT_FIRST_DAYS = 14  # the first fit sees at least this many paired days
FIT_MIN_DAYS = 28  # 14 to fit on, 14 to judge it forward
EVAL_STEP_DAYS = 7
RIDGE_DAYS = 30.0


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks with ties averaged (as Spearman's rho needs)."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    sorted_x = x[order]
    # Ties: each run of equal values gets the mean of its positions.
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_x)) + 1]
    ends = np.r_[starts[1:], len(x)]
    mean_pos = (starts + ends - 1) / 2.0
    ranks[order] = np.repeat(mean_pos, ends - starts)
    return ranks


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho of the pairs where both are known (NaN: too few or constant)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = ~(np.isnan(x) | np.isnan(y))
    if ok.sum() < 3:
        return float("nan")
    rx, ry = _ranks(x[ok]), _ranks(y[ok])
    sx, sy = rx.std(), ry.std()
    if sx == 0 or sy == 0:
        return float("nan")
    rho = ((rx - rx.mean()) * (ry - ry.mean())).mean() / (sx * sy)
    return float(np.clip(rho, -1.0, 1.0))


@dataclass(frozen=True)
class Agreement:
    n: int
    rho: float | None  # None: fewer than MIN_DAYS paired days, or no variation
    lo: float | None
    hi: float | None

    @property
    def enough(self) -> bool:
        return self.rho is not None

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "rho": self.rho, "ci95": [self.lo, self.hi] if self.enough else None}


def agreement(x: np.ndarray, y: np.ndarray, seed: int = 0) -> Agreement:
    """rho of x with y over their paired days, with a bootstrap 95 % interval."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = ~(np.isnan(x) | np.isnan(y))
    n = int(ok.sum())
    if n < MIN_DAYS:
        return Agreement(n, None, None, None)
    x, y = x[ok], y[ok]
    rho = spearman(x, y)
    if rho != rho:
        return Agreement(n, None, None, None)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(BOOTSTRAP, n))
    boot = np.array([spearman(x[d], y[d]) for d in draws])
    boot = boot[~np.isnan(boot)]
    lo, hi = np.percentile(boot, [2.5, 97.5]) if len(boot) else (np.nan, np.nan)
    return Agreement(n, round(rho, 3), round(float(lo), 3), round(float(hi), 3))


def combine(scores: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """A meter as mappings.meters makes it: 0.5 plus the weighted mean pull of the inputs
    with evidence (scores: days x inputs, NaN = none); NaN where no input spoke."""
    has = ~np.isnan(scores)
    w = np.where(has, weights[None, :], 0.0)
    wsum = w.sum(axis=1)
    pull = (np.nan_to_num(scores) - 0.5) * w
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(wsum > 0, 0.5 + pull.sum(axis=1) / wsum, np.nan)


def fit_weights(scores: np.ndarray, target: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Weights for one person: ridge regression of the target on the inputs' pulls,
    shrunk toward the prior weights (scaled to the target), negatives set to 0, then
    scaled to the prior's total. The prior itself when there is nothing to fit."""
    ok = ~np.isnan(target) & (~np.isnan(scores)).any(axis=1)
    if ok.sum() < 3 or prior.sum() <= 0:
        return prior.copy()
    x = np.nan_to_num(scores[ok] - 0.5)  # a missing input pulls nowhere
    y = target[ok] - target[ok].mean()
    x = x - x.mean(axis=0)
    var = np.maximum(x.var(axis=0), 1e-6)
    guide = x @ prior
    scale = float(guide @ y / max(guide @ guide, 1e-9))
    beta0 = max(scale, 0.0) * prior
    penalty = RIDGE_DAYS * np.diag(var)
    beta = np.linalg.solve(x.T @ x + penalty, x.T @ y + penalty @ beta0)
    w = np.clip(beta, 0.0, None)
    if w.sum() <= 0:
        return prior.copy()
    return w * prior.sum() / w.sum()


@dataclass(frozen=True)
class FitResult:
    weights: np.ndarray  # the fit on every paired day
    forward_fitted: float | None  # forward rho of refitted weights, on the judged days
    forward_bundled: float | None  # the bundled weights' rho on the same days
    judged_days: int

    @property
    def better(self) -> bool:
        return (
            self.forward_fitted is not None
            and self.forward_bundled is not None
            and self.forward_fitted > self.forward_bundled
        )


def forward_fit(scores: np.ndarray, target: np.ndarray, prior: np.ndarray) -> FitResult | None:
    """Fit on the days before, score the next EVAL_STEP_DAYS, in time order (rows are days
    in order). None: fewer than FIT_MIN_DAYS paired days."""
    paired = np.flatnonzero(~np.isnan(target) & (~np.isnan(scores)).any(axis=1))
    if len(paired) < FIT_MIN_DAYS:
        return None
    s, t = scores[paired], target[paired]
    fitted, bundled = np.full(len(t), np.nan), np.full(len(t), np.nan)
    for start in range(FIT_FIRST_DAYS, len(t), EVAL_STEP_DAYS):
        stop = min(start + EVAL_STEP_DAYS, len(t))
        w = fit_weights(s[:start], t[:start], prior)
        fitted[start:stop] = combine(s[start:stop], w)
        bundled[start:stop] = combine(s[start:stop], prior)
    judged = ~np.isnan(fitted)
    rf, rb = spearman(fitted[judged], t[judged]), spearman(bundled[judged], t[judged])
    return FitResult(
        fit_weights(s, t, prior),
        None if rf != rf else round(rf, 3),
        None if rb != rb else round(rb, 3),
        int(judged.sum()),
    )
