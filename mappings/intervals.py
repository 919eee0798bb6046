"""Interval arithmetic on int64 ns arrays: merge per group, coverage, cumulative sums.

Everything is vectorized (sort + running max + searchsorted), so a feature over five years
of records and thousands of slots costs a few array passes, not a Python loop per slot.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def merge(
    groups: np.ndarray, starts: np.ndarray, ends: np.ndarray, gap: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Union of intervals per group; intervals closer than `gap` ns are joined too.

    Returns (group, start, end) of the merged intervals, sorted by group then start.
    """
    keep = ends > starts
    g, s, e = groups[keep], starts[keep], ends[keep]
    if len(s) == 0:
        return g, s, e
    order = np.lexsort((e, s, g))
    g, s, e = g[order], s[order], e[order]
    run_max = _group_cummax(g, s, e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (s[1:] > run_max[:-1] + gap)
    first = np.flatnonzero(new)
    return g[first], s[first], np.maximum.reduceat(e, first)


def _group_cummax(g: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Running max of `e` within each group (rows sorted by group, then start)."""
    first = np.r_[True, g[1:] != g[:-1]]
    rank = np.cumsum(first) - 1
    base = s[first][rank]  # each group's earliest start
    rel = e - base
    size = int(rel.max()) + 1
    if (int(rank[-1]) + 1) * size < 2**62:
        # Lift each group above the previous one, so one global running max never
        # carries a value across groups.
        lift = rank.astype(np.int64) * size
        return np.maximum.accumulate(lift + rel) - lift + base
    return pd.Series(e).groupby(g).cummax().to_numpy()


def union_length(groups: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> pd.Series:
    """Total ns covered per group by the union of its intervals (overlaps counted once)."""
    g, s, e = merge(groups, starts, ends)
    return pd.Series(e - s).groupby(g).sum()


class Coverage:
    """How much of [lo, hi) a set of intervals covers, for many (lo, hi) at once."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray, gap: int = 0) -> None:
        zeros = np.zeros(len(starts), dtype=np.int64)
        _, self.s, self.e = merge(zeros, starts, ends, gap)
        self.cum = np.concatenate(([0], np.cumsum(self.e - self.s)))

    def _upto(self, t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(self.s, t, side="right")  # intervals starting at or before t
        before = self.cum[np.maximum(k - 1, 0)]
        last = np.where(k > 0, np.clip(t - self.s[np.maximum(k - 1, 0)], 0, None), 0)
        last = np.minimum(last, np.where(k > 0, (self.e - self.s)[np.maximum(k - 1, 0)], 0))
        return np.where(k > 0, before + last, 0)

    def covered(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """ns covered within each [lo, hi)."""
        if len(self.s) == 0:
            return np.zeros(np.broadcast(lo, hi).shape, dtype=np.int64)
        return np.maximum(self._upto(np.maximum(hi, lo)) - self._upto(lo), 0)

    def contains(self, t: np.ndarray) -> np.ndarray:
        """Whether each instant lies inside an interval."""
        if len(self.s) == 0:
            return np.zeros(len(t), dtype=bool)
        k = np.searchsorted(self.s, t, side="right") - 1
        return (k >= 0) & (t < self.e[np.maximum(k, 0)])


class Cumulative:
    """Sum and count of values stamped at instants, over many windows (lo, hi] at once."""

    def __init__(self, at: np.ndarray, values: np.ndarray) -> None:
        order = np.lexsort((values, at))
        self.at = at[order]
        self.cum = np.concatenate(([0.0], np.cumsum(values[order])))

    def window(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(sum, count) of values with lo < at <= hi."""
        a = np.searchsorted(self.at, lo, side="right")
        b = np.searchsorted(self.at, hi, side="right")
        return self.cum[b] - self.cum[a], b - a
