"""How old each meter's evidence is, and when a meter is stale or withheld.

A meter's age is the time from its freshest input (the newest reading or calendar event of
a metric one of its weighted inputs reads, ended by the slot's end or now) to that
moment. Older than `stale_after_hours` = stale: the value stays, marked. Confidence below
`min_confidence` = withheld: null with a reason that says how little evidence there was
and how old it is, instead of a number carried by one weak input.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mappings.ages import human_age
from mappings.frames import NS_PER_HOUR, Events, Readings
from mappings.vocabulary import CALENDAR, INPUTS, spec

__all__ = ["human_age"]  # its home is mappings/ages.py (no pandas); kept importable here

# Input name -> the stored metrics (or "calendar", "tasks") it reads, as declared.
INPUT_METRICS: dict[str, tuple[str, ...]] = {s.name: s.metrics for s in INPUTS}


def metrics_of(inputs: list[str]) -> tuple[str, ...]:
    """The stored metrics (and "calendar", "tasks") behind some inputs, sorted.

    An undeclared input is a KeyError, never a guess. Task changes carry no age here
    (`newest_by_metric` knows readings and the calendar), so a meter's tasks leave its
    age to its calendar and readings.
    """
    return tuple(sorted({m for name in inputs for m in spec(name).metrics}))


@dataclass(frozen=True)
class FreshnessRules:
    stale_after_hours: float = 48.0
    min_confidence: float = 0.0


def newest_by_metric(
    readings: Readings, events: Events, as_of: np.ndarray
) -> dict[str, np.ndarray]:
    """Per metric, per slot: the end (ns) of the newest record ended by `as_of`; -1 = none."""
    out: dict[str, np.ndarray] = {}
    ends_by = {m: np.sort(g["end"].to_numpy()) for m, g in readings.table.groupby("metric")}
    if len(events.table):
        # A calendar's freshest evidence is its latest event that has begun.
        ends_by[CALENDAR] = np.sort(events.table["start"].to_numpy())
    for metric, ends in ends_by.items():
        idx = np.searchsorted(ends, as_of, side="right") - 1
        out[str(metric)] = np.where(idx >= 0, ends[np.clip(idx, 0, None)], -1)
    return out


def meter_newest(newest: dict[str, np.ndarray], metrics: tuple[str, ...], n: int) -> np.ndarray:
    """The newest of several metrics per slot (-1 = none)."""
    best = np.full(n, -1, dtype=np.int64)
    for m in metrics:
        if m in newest:
            best = np.maximum(best, newest[m])
    return best


def age_hours(newest_ns: int, as_of_ns: int) -> float | None:
    return None if newest_ns < 0 else round(max(0, as_of_ns - newest_ns) / NS_PER_HOUR, 1)
