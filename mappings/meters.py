"""Readings and calendar events -> the five meters of each local slot.

Pure functions over pandas frames (no I/O). Every meter is the weighted mean of the input
scores that have evidence, each score in [0, 1]; physiological signals are compared to the
person's own rolling baseline for that metric and source (ln-transform, median and MAD,
z-score, logistic squash), so Apple's SDNN and Whoop's RMSSD are never mixed.

Frames:
  readings: metric, start_utc, end_utc, value, label, origin  (tz-aware UTC timestamps)
  events:   start_utc, end_utc, action, status, transparency, all_day, attendee_count
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta, tzinfo
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mappings.actions import METERS
from mappings.slots import DEFAULT_BOUNDARIES, SlotKey, day_bounds, slot_bounds

ASLEEP = ("asleep", "core", "deep", "rem")
HRV_METRICS = ("hrv_sdnn", "hrv_rmssd")
BASELINE_DAYS = 60
MIN_BASELINE_DAYS = 7
COLD_START_CONFIDENCE = 0.4
# Population anchors for the cold start: (typical value, spread in ln units).
POPULATION = {"hrv_sdnn": (45.0, 0.35), "hrv_rmssd": (40.0, 0.40), "resting_hr": (62.0, 0.10)}
WORK_CREDIT = {"DEEP_WORK": 1.0, "LEARN": 1.0, "ADMIN_WORK": 0.5}
SOCIAL = ("SOCIALIZE", "FAMILY_TIME")

READING_COLUMNS = ["metric", "start_utc", "end_utc", "value", "label", "origin"]
EVENT_COLUMNS = [
    "start_utc",
    "end_utc",
    "action",
    "status",
    "transparency",
    "all_day",
    "attendee_count",
]


@dataclass(frozen=True)
class Weights:
    version: str
    meters: dict[str, dict[str, float]]
    targets: dict[str, float]


def load_weights(path: Path | None = None) -> Weights:
    source = path or files("mappings").joinpath("meter_weights.toml")
    data = tomllib.loads(source.read_text(encoding="utf-8"))
    meters = {m: {k: float(v) for k, v in data[m].items()} for m in METERS}
    return Weights(str(data["version"]), meters, {k: float(v) for k, v in data["targets"].items()})


@dataclass
class Input:
    """One input's evidence for one slot."""

    name: str
    score: float  # in [0, 1], higher is better for the meter
    confidence: float
    raw: float | None = None
    baseline: dict[str, float] | None = None

    def as_dict(self, weight: float) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "score": round(self.score, 4),
            "weight": weight,
            "confidence": round(self.confidence, 3),
        }
        if self.raw is not None:
            out["value"] = round(self.raw, 3)
        if self.baseline:
            out["baseline"] = {k: round(v, 3) for k, v in self.baseline.items()}
        return out


@dataclass
class MeterValue:
    value: float | None
    confidence: float | None
    provenance: dict[str, Any]


@dataclass
class SlotMeters:
    key: SlotKey
    meters: dict[str, MeterValue]
    deltas: dict[str, float | None] = field(default_factory=dict)
    mapping_version: str = ""


def _squash(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def empty_readings() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object") for c in READING_COLUMNS})


def empty_events() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object") for c in EVENT_COLUMNS})


def _prepare(readings: pd.DataFrame, events: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Canonical, de-duplicated, sorted copies (results must not depend on row order)."""
    r = readings.copy()
    for col in ("start_utc", "end_utc"):
        r[col] = pd.to_datetime(r[col], utc=True)
    r["value"] = pd.to_numeric(r["value"], errors="coerce")
    r = r.drop_duplicates(subset=READING_COLUMNS).sort_values(READING_COLUMNS, kind="stable")
    e = events.copy()
    for col in ("start_utc", "end_utc"):
        e[col] = pd.to_datetime(e[col], utc=True)
    if len(e):
        e = e[(e["status"] != "cancelled") & (e["action"] != "NOT_AN_ACTION")]
        e = e.drop_duplicates(subset=EVENT_COLUMNS).sort_values(EVENT_COLUMNS, kind="stable")
    return r.reset_index(drop=True), e.reset_index(drop=True)


def _union_minutes(
    starts: Any, ends: Any, lo: pd.Timestamp | None = None, hi: pd.Timestamp | None = None
) -> float:
    """Minutes covered by the union of intervals, optionally clipped to [lo, hi)."""
    if len(starts) == 0:
        return 0.0
    # pandas 3 keeps the input's resolution; pin nanoseconds so the arithmetic is known.
    s = pd.DatetimeIndex(pd.to_datetime(starts, utc=True)).as_unit("ns")
    e = pd.DatetimeIndex(pd.to_datetime(ends, utc=True)).as_unit("ns")
    if lo is not None and hi is not None:
        s = s.where(s > lo, lo)
        e = e.where(e < hi, hi)
    a_all, b_all = s.asi8, e.asi8
    order = np.argsort(a_all, kind="stable")
    total = 0
    cur_s = cur_e = None
    for i in order:
        a, b = int(a_all[i]), int(b_all[i])
        if b <= a:
            continue
        if cur_e is None or a > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = a, b
        elif b > cur_e:
            cur_e = b
    if cur_e is not None:
        total += cur_e - cur_s
    return total / 60e9


class _Context:
    """Everything computed once per run and shared by the slots."""

    def __init__(
        self,
        readings: pd.DataFrame,
        events: pd.DataFrame,
        tz: tzinfo,
        boundaries: tuple[time, ...],
        weights: Weights,
    ) -> None:
        self.r, self.e = _prepare(readings, events)
        self.tz, self.boundaries, self.w = tz, boundaries, weights
        self._daily_cache: dict[tuple[str, str], pd.Series] = {}

    def metric(self, name: str) -> pd.DataFrame:
        return self.r[self.r["metric"] == name]

    # --- physiological inputs -------------------------------------------------------
    def sleep(self, day: Any) -> tuple[float, float, float] | None:
        """(asleep minutes, deep minutes, confidence) of the main sleep ending on `day`."""
        wake_lo = datetime.combine(day - timedelta(days=1), time(18), tzinfo=self.tz)
        wake_hi = datetime.combine(day, time(14), tzinfo=self.tz)
        s = self.metric("sleep")
        s = s[(s["end_utc"] > wake_lo) & (s["end_utc"] <= wake_hi)]
        if s.empty:
            return None
        asleep = s[s["label"].isin(ASLEEP)]
        if asleep.empty:  # only "in bed": an estimate, with less confidence
            return _union_minutes(s["start_utc"], s["end_utc"]) * 0.9, 0.0, 0.5
        total = _union_minutes(asleep["start_utc"], asleep["end_utc"])
        deep = asleep[asleep["label"] == "deep"]
        staged = bool((asleep["label"] != "asleep").any())
        deep_min = _union_minutes(deep["start_utc"], deep["end_utc"])
        return total, deep_min, 1.0 if staged else 0.8

    def _daily(self, metric: str, origin: str) -> pd.Series:
        """Mean per local calendar date (of the reading's end) for one metric and origin."""
        key = (metric, origin)
        if key not in self._daily_cache:
            m = self.r[
                (self.r["metric"] == metric) & (self.r["origin"] == origin) & (self.r["value"] > 0)
            ]
            dates = m["end_utc"].dt.tz_convert(self.tz).dt.date
            self._daily_cache[key] = m["value"].groupby(dates).mean().dropna()
        return self._daily_cache[key]

    def baseline_score(
        self, metric: str, as_of: pd.Timestamp, inverse: bool = False
    ) -> Input | None:
        """The latest 24 hours' value vs this person's baseline, per origin, then averaged.

        "Latest 24 hours" makes the morning see last night's HRV and yesterday's resting
        HR, which is all a wearable knows by then. The baseline is the daily means of the
        60 days before that window, never including it.
        """
        window_lo = as_of - pd.Timedelta(hours=24)
        m = self.metric(metric)
        m = m[(m["end_utc"] <= as_of) & (m["end_utc"] > window_lo) & (m["value"] > 0)]
        if m.empty:
            return None
        last_day = window_lo.tz_convert(self.tz).date()
        scores, confs, raws, bases = [], [], [], {}
        for origin, group in m.groupby("origin", sort=True):
            today = float(group["value"].mean())
            history = self._daily(metric, origin)
            history = history[
                (history.index < last_day)
                & (history.index >= last_day - timedelta(days=BASELINE_DAYS))
            ]
            if len(history) >= MIN_BASELINE_DAYS:
                logs = np.log(history.to_numpy(dtype=float))
                center = float(np.median(logs))
                spread = max(1.4826 * float(np.median(np.abs(logs - center))), 0.05)
                conf = min(1.0, len(history) / 28)
            else:
                typical, spread = POPULATION.get(metric, (today, 0.3))
                center, conf = math.log(typical), COLD_START_CONFIDENCE
            z = (math.log(today) - center) / spread
            scores.append(_squash(-z if inverse else z))
            confs.append(conf)
            raws.append(today)
            bases[f"{origin or 'unknown'}_median"] = math.exp(center)
        return Input(
            metric, float(np.mean(scores)), float(np.mean(confs)), float(np.mean(raws)), bases
        )

    def hrv(self, as_of: pd.Timestamp) -> Input | None:
        found = [x for x in (self.baseline_score(m, as_of) for m in HRV_METRICS) if x]
        if not found:
            return None
        return Input(
            "hrv",
            float(np.mean([f.score for f in found])),
            float(np.mean([f.confidence for f in found])),
            None,
            {k: v for f in found for k, v in (f.baseline or {}).items()},
        )

    def steps_so_far(self, day: Any, as_of: pd.Timestamp) -> Input | None:
        day_lo, _ = day_bounds(day, self.tz, self.boundaries)
        lo = pd.Timestamp(day_lo)
        if as_of <= lo:
            return None
        buckets = self._step_buckets()
        if buckets.empty:
            return None
        today = buckets[(buckets.index >= lo) & (buckets.index < as_of)]
        if today.empty:
            return None
        done = float(today.sum())
        # Expected pace: a usual day's steps spread over 07:00-22:00 local.
        active_lo = pd.Timestamp(datetime.combine(day, time(7), tzinfo=self.tz))
        fraction = min(1.0, max(0.0, (as_of - active_lo).total_seconds() / (15 * 3600)))
        if fraction < 0.05:
            return None
        daily = self._daily_steps()
        history = daily[(daily.index < day) & (daily.index >= day - timedelta(days=28))]
        if len(history) >= MIN_BASELINE_DAYS:
            usual, conf = float(history.median()), min(1.0, len(history) / 14)
        else:
            usual, conf = self.w.targets["steps_per_day"], COLD_START_CONFIDENCE
        ratio = done / max(usual * fraction, 1.0)
        return Input(
            "steps", _squash(2.0 * (ratio - 1.0)), conf * fraction, done, {"usual_per_day": usual}
        )

    def _step_buckets(self) -> pd.Series:
        """Steps per 15-minute bucket, overlaps between origins resolved (cached).

        Each record is assigned to the bucket it starts in; in each bucket the origin
        with the most steps is taken: the Watch and the phone count the same walk, and a
        walk only one of them saw still counts. Not a naive sum, not a daily max.
        """
        if "_buckets" not in self.__dict__:
            s = self.metric("steps")
            bucket = s["start_utc"].dt.floor("15min")
            per = s.groupby([bucket, s["origin"]])["value"].sum()
            self._buckets = per.groupby(level=0).max() if len(per) else pd.Series(dtype=float)
        return self._buckets

    def _daily_steps(self) -> pd.Series:
        if "_daily_steps_cache" not in self.__dict__:
            b = self._step_buckets()
            if b.empty:
                self._daily_steps_cache = pd.Series(dtype=float)
            else:
                shifted = b.index.tz_convert(self.tz) - pd.Timedelta(
                    hours=self.boundaries[0].hour, minutes=self.boundaries[0].minute
                )
                self._daily_steps_cache = b.groupby(shifted.date).sum()
        return self._daily_steps_cache

    # --- calendar inputs ------------------------------------------------------------
    def busy_share(self, lo: pd.Timestamp, hi: pd.Timestamp) -> float | None:
        if hi <= lo or self.e.empty:
            return None
        busy = self.e[
            (self.e["transparency"] == "opaque")
            & (~self.e["all_day"].astype(bool))
            & (self.e["end_utc"] > lo)
            & (self.e["start_utc"] < hi)
        ]
        minutes = _union_minutes(busy["start_utc"], busy["end_utc"], lo, hi)
        return minutes / ((hi - lo).total_seconds() / 60)

    def has_calendar(self, lo: pd.Timestamp, hi: pd.Timestamp) -> bool:
        return (
            bool(((self.e["start_utc"] < hi) & (self.e["end_utc"] > lo)).any())
            if not self.e.empty
            else False
        )

    def meetings(self, lo: pd.Timestamp, hi: pd.Timestamp) -> int:
        if self.e.empty:
            return 0
        m = self.e[
            (self.e["attendee_count"] >= 2) & (self.e["start_utc"] < hi) & (self.e["end_utc"] > lo)
        ]
        return len(m)

    def work_minutes(self, lo: pd.Timestamp, hi: pd.Timestamp) -> float:
        if self.e.empty or hi <= lo:
            return 0.0
        total = 0.0
        for action, credit in WORK_CREDIT.items():
            ev = self.e[
                (self.e["action"] == action) & (self.e["end_utc"] > lo) & (self.e["start_utc"] < hi)
            ]
            total += credit * _union_minutes(ev["start_utc"], ev["end_utc"], lo, hi)
        return total

    def social_events(self, lo: pd.Timestamp, hi: pd.Timestamp) -> int:
        if self.e.empty:
            return 0
        ev = self.e[
            self.e["action"].isin(SOCIAL) & (self.e["start_utc"] >= lo) & (self.e["start_utc"] < hi)
        ]
        return len(ev)


def _combine(
    meter: str, inputs: dict[str, Input], weights: Weights, missing_reason: str
) -> MeterValue:
    table = weights.meters[meter]
    used = {name: inp for name, inp in inputs.items() if name in table and table[name] > 0}
    if not used:
        return MeterValue(
            None, None, {"reason": missing_reason, "mapping_version": weights.version}
        )
    total_w = sum(table.values())
    w_used = sum(table[n] for n in used)
    value = sum(table[n] * inp.score for n, inp in used.items()) / w_used
    confidence = (w_used / total_w) * float(np.mean([inp.confidence for inp in used.values()]))
    return MeterValue(
        round(min(1.0, max(0.0, value)), 4),
        round(min(1.0, max(0.0, confidence)), 3),
        {
            "inputs": [inp.as_dict(table[n]) for n, inp in sorted(used.items())],
            "missing": sorted(set(table) - set(used)),
            "mapping_version": weights.version,
        },
    )


def compute_slots(
    readings: pd.DataFrame,
    events: pd.DataFrame,
    slots: list[SlotKey],
    *,
    tz: tzinfo,
    now: datetime,
    boundaries: tuple[time, ...] = DEFAULT_BOUNDARIES,
    weights: Weights | None = None,
    previous: SlotMeters | None = None,
) -> list[SlotMeters]:
    """The meters of each slot, using only evidence available by the slot's end (or now)."""
    weights = weights or load_weights()
    ctx = _Context(readings, events, tz, boundaries, weights)
    t = weights.targets
    now_ts = pd.Timestamp(now).tz_convert("UTC")
    out: list[SlotMeters] = []
    prev = previous
    for key in sorted(slots, key=lambda k: (k.local_date, k.slot)):
        s_lo, s_hi = (pd.Timestamp(x) for x in slot_bounds(key, tz, boundaries))
        d_lo, _ = (pd.Timestamp(x) for x in day_bounds(key.local_date, tz, boundaries))
        as_of = min(s_hi, now_ts)
        inputs: dict[str, Input] = {}
        sleep = ctx.sleep(key.local_date)
        if sleep is not None:
            asleep, deep, conf = sleep
            inputs["sleep_duration"] = Input(
                "sleep_duration", _squash((asleep - (t["sleep_minutes"] - 60)) / 45), conf, asleep
            )
            if deep > 0:
                share = deep / max(asleep, 1.0)
                inputs["deep_sleep_share"] = Input(
                    "deep_sleep_share",
                    _squash((share - t["deep_share"] * 0.75) / 0.04),
                    conf,
                    share,
                )
        for name, found in (
            ("hrv", ctx.hrv(as_of)),
            ("resting_hr", ctx.baseline_score("resting_hr", as_of, inverse=True)),
            ("steps", ctx.steps_so_far(key.local_date, as_of)),
        ):
            if found is not None:
                found.name = name
                inputs[name] = found
        has_cal = ctx.has_calendar(d_lo - pd.Timedelta(days=7), s_hi)
        if has_cal:
            slot_busy = ctx.busy_share(s_lo, s_hi) or 0.0
            inputs["slot_density"] = Input("slot_density", 1.0 - slot_busy, 1.0, slot_busy)
            if s_lo > d_lo:
                load = ctx.busy_share(d_lo, s_lo) or 0.0
                inputs["day_load"] = Input("day_load", 1.0 - min(1.0, load * 2), 1.0, load)
            meetings = ctx.meetings(d_lo, s_hi)
            inputs["meeting_density"] = Input(
                "meeting_density",
                1.0 - min(1.0, meetings / (2 * t["meetings_per_day"])),
                1.0,
                float(meetings),
            )
            today = ctx.work_minutes(d_lo, as_of)
            inputs["work_today"] = Input(
                "work_today", min(1.0, today / t["work_minutes"]), 1.0, today
            )
            week = ctx.work_minutes(d_lo - pd.Timedelta(days=7), d_lo) / 7
            inputs["work_week"] = Input("work_week", min(1.0, week / t["work_minutes"]), 0.8, week)
            social = ctx.social_events(s_hi - pd.Timedelta(days=7), s_hi)
            inputs["social_week"] = Input(
                "social_week", 1.0 - math.exp(-social / t["social_events_week"]), 1.0, float(social)
            )
        reasons = {
            "vitality": "no sleep, HRV, resting heart rate or step data for this day yet",
            "cognition": "no sleep stages and no calendar for this day",
            "progress": "no calendar events in the past 7 days to measure work done",
            "serenity": "no HRV and no calendar for this day",
            "connection": "no calendar events in the past 7 days",
        }
        meters = {m: _combine(m, inputs, weights, reasons[m]) for m in METERS}
        deltas: dict[str, float | None] = {}
        for m in METERS:
            before = prev.meters[m].value if prev and prev.key == key.prev() else None
            now_v = meters[m].value
            deltas[m] = (
                round(now_v - before, 4) if now_v is not None and before is not None else None
            )
        current = SlotMeters(key, meters, deltas, weights.version)
        out.append(current)
        prev = current
    return out
