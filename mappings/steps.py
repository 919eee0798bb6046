"""Steps without double counting: overlaps between sources resolved by interval merge.

A phone in the pocket and a watch on the wrist count the same walk. Sources are ranked
(`[steps] priority` in meter_weights.toml: substrings of the origin name, first = most
trusted); every record keeps only the share of its steps that falls outside the time
already covered by higher-ranked sources. So a walk only the phone saw still counts, the
walk both saw counts once, and nothing depends on the order records arrive in.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mappings.frames import Readings
from mappings.intervals import Coverage, Cumulative


def rank_origins(origins: np.ndarray, priority: tuple[str, ...]) -> np.ndarray:
    """Rank per record: index of the first matching priority pattern, unknown last."""
    unique, codes = np.unique(origins.astype(str), return_inverse=True)
    per_name = [
        next((i for i, p in enumerate(priority) if p.lower() in name.lower()), len(priority))
        for name in unique
    ]
    return np.asarray(per_name, dtype=np.int64)[codes]


def resolve(readings: Readings, priority: tuple[str, ...]) -> pd.DataFrame:
    """Step records with `kept` steps after overlap resolution (start, end, origin, kept)."""
    s = readings.metric("steps")
    s = s[s["value"].fillna(0) > 0]
    if s.empty:
        return pd.DataFrame(columns=["start", "end", "local_end", "origin", "kept"])
    origins = s["origin"].to_numpy()
    rank = rank_origins(origins, priority)
    # Same rank, different origin: rank by name so the choice is stable.
    names = sorted(set(origins))
    rank = rank * (len(names) + 1) + np.searchsorted(names, origins)
    start, end, value = s["start"].to_numpy(), s["end"].to_numpy(), s["value"].to_numpy()
    kept = value.astype(float).copy()
    for level in np.unique(rank):
        mine = rank == level
        higher = rank < level
        if not higher.any():
            continue
        cov = Coverage(start[higher], end[higher])
        length = end[mine] - start[mine]
        covered = cov.covered(start[mine], end[mine])
        share = np.where(
            length > 0,
            1.0 - covered / np.maximum(length, 1),
            (~cov.contains(start[mine])).astype(float),
        )
        kept[mine] = value[mine] * share
    return pd.DataFrame(
        {
            "start": start,
            "end": end,
            "local_end": s["local_end"].to_numpy(),
            "origin": origins,
            "kept": kept,
        }
    )


class StepCounter:
    """Steps between any two instants, each record counted at its midpoint."""

    def __init__(self, resolved: pd.DataFrame) -> None:
        mid = (
            resolved["start"].to_numpy(dtype=np.int64) + resolved["end"].to_numpy(dtype=np.int64)
        ) // 2
        self.cum = Cumulative(mid, resolved["kept"].to_numpy(dtype=float))
        self.empty = resolved.empty

    def between(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(steps, records) with lo < midpoint <= hi."""
        return self.cum.window(lo, hi)


def daily_totals(resolved: pd.DataFrame, day_start_ns: int) -> pd.Series:
    """Steps per local day (epoch-day index); the day starts at the first slot boundary."""
    if resolved.empty:
        return pd.Series(dtype=float)
    mid_local = (
        resolved["local_end"].to_numpy(dtype=np.int64)
        - (resolved["end"].to_numpy(dtype=np.int64) - resolved["start"].to_numpy(dtype=np.int64))
        // 2
    )
    day = np.floor_divide(mid_local - day_start_ns, 86_400 * 10**9)
    return pd.Series(resolved["kept"].to_numpy(dtype=float)).groupby(day).sum()
