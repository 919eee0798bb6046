"""Personal baselines: a signal compared to the person's own recent history for that source.

A daily series (one value per local day, per metric and origin) gets, for every day D, the
median and spread of the days [D - window, D - 1], on a log scale for ratio-like signals
(HRV, heart rate). The spread is the interquartile range / 1.349 (a robust sigma), never
below a floor, so one flat week cannot make every small change look extreme. The score is
a logistic squash of the z-score. With fewer than `min_days` days of history the cold-start
rule applies: a population anchor and a low confidence, which grows to 1 at `full_days`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True, kw_only=True)
class BaselineRule:
    window_days: int = 60
    min_days: int = 7
    full_days: int = 28
    log: bool = True
    spread_floor: float = 0.05
    population: tuple[float, float] | None = None  # (typical value, spread) for cold start
    cold_start_confidence: float = 0.4


def squash(z: np.ndarray | float) -> np.ndarray:
    """Logistic function, clipped so exp never overflows."""
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30.0, 30.0)))


@dataclass
class Baseline:
    """Per-day baseline statistics over a contiguous range of epoch days."""

    first_day: int
    center: np.ndarray  # on the rule's scale (log or raw); NaN when no history
    spread: np.ndarray
    days: np.ndarray  # how many days of history the baseline saw

    def at(self, day: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        i = day - self.first_day
        ok = (i >= 0) & (i < len(self.center))
        j = np.clip(i, 0, max(len(self.center) - 1, 0))
        if len(self.center) == 0:
            nan = np.full(len(day), np.nan)
            return nan, nan, np.zeros(len(day))
        return (
            np.where(ok, self.center[j], np.nan),
            np.where(ok, self.spread[j], np.nan),
            np.where(ok, self.days[j], np.where(i >= len(self.center), self.days[-1], 0)),
        )


def rolling_baseline(daily: pd.Series, rule: BaselineRule, last_day: int) -> Baseline:
    """Baseline for every day from the series' first day to `last_day` (epoch days)."""
    if daily.empty:
        return Baseline(last_day, np.zeros(0), np.zeros(0), np.zeros(0))
    first = int(daily.index.min())
    full = daily.reindex(range(first, max(last_day, int(daily.index.max())) + 2))
    x = np.log(full.clip(lower=1e-9)) if rule.log else full
    past = x.shift(1).rolling(rule.window_days, min_periods=1)
    center = past.median().to_numpy()
    iqr = (past.quantile(0.75) - past.quantile(0.25)).to_numpy() / 1.349
    spread = np.maximum(np.nan_to_num(iqr, nan=rule.spread_floor), rule.spread_floor)
    days = past.count().to_numpy()
    return Baseline(first, center, spread, days)


def score_against(
    value: np.ndarray, baseline: Baseline, day: np.ndarray, rule: BaselineRule, inverse: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(score in [0, 1], confidence, baseline centre in the signal's unit) per value."""
    center, spread, days = baseline.at(day)
    cold = ~(days >= rule.min_days)
    if rule.population is not None:
        typical, pop_spread = rule.population
        pop_center = math.log(typical) if rule.log else typical
    else:  # no anchor: today's own value, so the score is neutral
        pop_center, pop_spread = np.nan, rule.spread_floor * 4
    x = np.log(np.clip(value, 1e-9, None)) if rule.log else value
    c = np.where(cold, pop_center, center)
    c = np.where(np.isnan(c), x, c)
    s = np.where(cold, pop_spread, spread)
    z = (x - c) / s
    score = squash(-z if inverse else z)
    conf = np.where(cold, rule.cold_start_confidence, np.minimum(1.0, days / rule.full_days))
    return score, conf, np.exp(c) if rule.log else c
