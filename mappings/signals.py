"""Physiological signals scored against personal baselines, per source, for many slots.

Each signal is declared once (which metrics, how long a window of readings counts as
"now", direction, scale, cold-start anchor). HRV is scored per metric *and* origin, so
Apple's SDNN and Whoop's or Garmin's RMSSD are each compared to their own history and only
the resulting scores are averaged: raw values of two methods are never mixed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mappings.baselines import BaselineRule, rolling_baseline, score_against
from mappings.frames import NS_PER_HOUR, Readings, epoch_day
from mappings.vocabulary import spec


@dataclass(frozen=True, kw_only=True)
class Signal:
    """How an input of mappings/vocabulary.py (its name) is scored; it declares the rest."""

    name: str
    window_hours: float  # readings ending in (as_of - window, as_of] are "the latest"
    inverse: bool = False
    log: bool = True
    spread_floor: float = 0.05
    # A metric on another scale than the signal's first one: its own floor.
    floors: dict[str, float] = field(default_factory=dict)
    population: dict[str, tuple[float, float]] = field(default_factory=dict)
    # When set: only readings of these labels count, each with its own window (hours).
    # A once-a-day value describes the day from its moment on, a sample the hours around it.
    label_windows: dict[str, float] = field(default_factory=dict)

    @property
    def metrics(self) -> tuple[str, ...]:
        return spec(self.name).metrics

    @property
    def unit(self) -> str:
        return spec(self.name).unit


SIGNALS: tuple[Signal, ...] = (
    Signal(
        name="hrv",
        window_hours=24,
        population={"hrv_sdnn": (45.0, 0.35), "hrv_rmssd": (40.0, 0.40)},
    ),
    Signal(
        name="resting_hr",
        window_hours=24,
        inverse=True,
        spread_floor=0.03,
        population={"resting_hr": (62.0, 0.10)},
    ),
    Signal(
        name="stress",
        window_hours=6,
        inverse=True,
        log=False,
        spread_floor=5.0,
        population={"stress": (35.0, 12.0)},
    ),
    Signal(
        name="recovery",
        window_hours=24,
        log=False,
        spread_floor=8.0,
        # Fitbit's restoration points (of 25): PMData's 1,836 nights, mean 19, sd 3.3;
        # 2 points are the 8 % of WHOOP's scale.
        floors={"restoration": 2.0},
        population={"recovery": (55.0, 20.0), "restoration": (19.0, 3.3)},
    ),
    Signal(
        name="body_battery",
        window_hours=3,
        log=False,
        spread_floor=8.0,
        population={"body_battery": (50.0, 20.0)},
        # Samples (no label) speak for 3 hours; the value at wake-up, dated at the wake-up,
        # for the day it starts, like WHOOP's recovery. A day's highest and lowest so far
        # have no moment they describe and do not count.
        label_windows={"": 3, "at_wake": 24},
    ),
)


@dataclass
class SignalResult:
    """Per slot: score, confidence, mean raw value (NaN = no evidence) and per-source detail."""

    score: np.ndarray
    confidence: np.ndarray
    raw: np.ndarray
    # source label -> (latest value, baseline centre) arrays, for provenance
    sources: dict[str, tuple[np.ndarray, np.ndarray]]
    # hours the freshest source's evidence is past the signal's window (0 = within it)
    overdue_hours: np.ndarray = field(default_factory=lambda: np.zeros(0))


def score_signal(
    readings: Readings,
    signal: Signal,
    as_of: np.ndarray,
    tz_offset_ns: np.ndarray,
    carry_hours: float = 0.0,
) -> SignalResult:
    """Score one signal for every slot (as_of: slot evidence cut-off, ns UTC).

    A source with no reading in the window but one at most `carry_hours` before it is
    carried: its last reading stands for the window, and `overdue_hours` says how far
    past the window it is (the caller lowers its weight, mappings/inputs.carry_decay).
    """
    n = len(as_of)
    total_score, total_conf, total_raw = np.zeros(n), np.zeros(n), np.zeros(n)
    count = np.zeros(n)
    overdue = np.full(n, np.inf)
    carry_ns = int(carry_hours * NS_PER_HOUR)
    sources: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    frame = readings.metric(*signal.metrics)
    frame = frame[frame["value"] > 0] if signal.log else frame[frame["value"] >= 0]
    keys = ["metric", "origin"]
    if signal.label_windows:
        frame = frame[frame["label"].isin(list(signal.label_windows))]
        keys.append("label")
    # The baseline's day is the same for every label: that of the signal's own window.
    base_day = epoch_day(as_of - int(signal.window_hours * NS_PER_HOUR) + tz_offset_ns)
    last_day = int(base_day.max()) if n else 0
    for key, group in frame.groupby(keys, sort=True):
        metric, origin = key[0], key[1]
        tag = str(key[2]) if len(key) > 2 else ""
        hours = signal.label_windows.get(tag, signal.window_hours)
        lo = as_of - int(hours * NS_PER_HOUR)
        end = group["end"].to_numpy()
        values = group["value"].to_numpy(dtype=float)
        order = np.argsort(end, kind="stable")
        end, values = end[order], values[order]
        cum = np.concatenate(([0.0], np.cumsum(values)))
        a = np.searchsorted(end, lo, side="right")
        b = np.searchsorted(end, as_of, side="right")
        k = b - a
        fresh = k > 0
        # No reading in the window: the last one before it, if recent enough, stands in.
        last = np.clip(a - 1, 0, None)
        gap = np.where(a > 0, lo - end[last], np.iinfo(np.int64).max)
        carried = ~fresh & (a > 0) & (gap <= carry_ns)
        has = fresh | carried
        if not has.any():
            continue
        mean = np.where(
            fresh,
            (cum[b] - cum[a]) / np.maximum(k, 1),
            np.where(carried, values[last], np.nan),
        )
        overdue = np.minimum(overdue, np.where(fresh, 0.0, np.where(carried, gap, np.inf)))
        daily = pd.Series(values).groupby(epoch_day(group["local_end"].to_numpy()[order])).mean()
        rule = BaselineRule(
            log=signal.log,
            spread_floor=signal.floors.get(str(metric), signal.spread_floor),
            population=signal.population.get(str(metric)),
        )
        base = rolling_baseline(daily, rule, last_day)
        score, conf, center = score_against(
            np.where(has, mean, 1.0), base, base_day, rule, signal.inverse
        )
        total_score += np.where(has, score, 0.0)
        total_conf += np.where(has, conf, 0.0)
        total_raw += np.where(has, mean, 0.0)
        count += has
        label = f"{metric}:{origin or 'unknown'}" + (f":{tag}" if tag else "")
        sources[label] = (mean, np.where(has, center, np.nan))
    with np.errstate(invalid="ignore", divide="ignore"):
        return SignalResult(
            np.where(count > 0, total_score / count, np.nan),
            np.where(count > 0, total_conf / count, np.nan),
            # One number only when one source spoke: SDNN and RMSSD are never averaged.
            np.where(count == 1, total_raw, np.nan),
            sources,
            np.where(np.isfinite(overdue), overdue / NS_PER_HOUR, np.nan),
        )
