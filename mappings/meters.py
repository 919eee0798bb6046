"""Readings and calendar events -> the five meters of each local slot.

Pure functions over pandas frames (no I/O); usable without the daemon:

    from mappings.meters import compute_slots
    results = compute_slots(readings, events, slots, tz=ZoneInfo("Europe/Berlin"), now=now)

A meter is 0.5 plus the weighted pull of every input that has evidence (each input's
score in [0, 1]; 0.5 is neutral), which is the weighted mean of the scores. Inputs come
from `mappings.inputs` (sleep, physiology vs personal baselines, activity, calendar);
weights from `meter_weights.toml`. A meter without any evidence is null with a reason,
never a made-up 0.5. Provenance records every input's value, score, weight, confidence,
baseline and effect (how much it moved the meter), and the mapping version.

Frames (see `mappings.frames`):
  readings: metric, start_utc, end_utc, value, label, origin, utc_offset_min
  events:   start_utc, end_utc, action, status, transparency, all_day, attendee_count, title
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, time, tzinfo
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mappings.actions import METERS
from mappings.calendar_features import CalendarRules
from mappings.frames import (
    EVENT_COLUMNS,
    READING_COLUMNS,
    Events,
    Readings,
    empty_events,
    empty_readings,
)
from mappings.inputs import InputArray, all_inputs, slot_arrays
from mappings.slots import DEFAULT_BOUNDARIES, SlotKey

__all__ = [
    "EVENT_COLUMNS",
    "READING_COLUMNS",
    "MeterValue",
    "SlotMeters",
    "Weights",
    "compute_slots",
    "empty_events",
    "empty_readings",
    "load_weights",
]

# Why a meter is null, by meter: the kinds of evidence it would need.
REASONS = {
    "vitality": "no sleep, HRV, resting heart rate, recovery, body battery, steps or workout "
    "data for this slot yet",
    "cognition": "no sleep data and no calendar for this day",
    "progress": "no calendar events in the past 7 days to measure work done",
    "serenity": "no HRV, stress, recovery or mindfulness data and no calendar for this day",
    "connection": "no calendar events in the past 7 days",
}


@dataclass(frozen=True)
class Weights:
    version: str
    meters: dict[str, dict[str, float]]
    targets: dict[str, float]
    step_priority: tuple[str, ...] = ()
    focus_credit: dict[str, float] = field(default_factory=dict)
    deadline_keywords: tuple[str, ...] = ()

    def calendar_rules(self) -> CalendarRules:
        words = "|".join(re.escape(w) for w in self.deadline_keywords) or r"(?!)"
        return CalendarRules(self.focus_credit, re.compile(rf"(?i)\b(?:{words})"))


def load_weights(path: Path | None = None) -> Weights:
    """The weights file (default: the bundled `mappings/meter_weights.toml`)."""
    source = path or files("mappings").joinpath("meter_weights.toml")
    data = tomllib.loads(source.read_text(encoding="utf-8"))
    meters = {m: {k: float(v) for k, v in data[m].items()} for m in METERS}
    return Weights(
        str(data["version"]),
        meters,
        {k: float(v) for k, v in data["targets"].items()},
        tuple(data.get("steps", {}).get("priority", ())),
        {k: float(v) for k, v in data.get("focus", {}).items()},
        tuple(data.get("deadlines", {}).get("keywords", ())),
    )


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


def _lists(inp: InputArray) -> tuple[list[float], list[float], list[float]]:
    return (
        np.round(inp.score, 4).tolist(),
        np.round(np.nan_to_num(inp.confidence, nan=0.0), 3).tolist(),
        np.round(inp.raw, 3).tolist(),
    )


def _combine_all(
    inputs: dict[str, InputArray], weights: Weights, n: int
) -> dict[str, tuple[np.ndarray, np.ndarray, list[str]]]:
    """Per meter: value and confidence arrays (NaN = null) and the input names it uses."""
    out = {}
    for meter in METERS:
        table = {k: w for k, w in weights.meters[meter].items() if w > 0}
        names = [k for k in table if k in inputs]
        total_w = sum(table.values()) or 1.0
        num, wsum, csum, k = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
        for name in names:
            inp, w = inputs[name], table[name]
            has = ~np.isnan(inp.score)
            num += np.where(has, w * (np.round(inp.score, 4) - 0.5), 0.0)
            wsum += np.where(has, w, 0.0)
            csum += np.where(has, np.nan_to_num(inp.confidence), 0.0)
            k += has
        with np.errstate(invalid="ignore", divide="ignore"):
            value = np.clip(0.5 + num / wsum, 0.0, 1.0)
            conf = np.clip((wsum / total_w) * (csum / k), 0.0, 1.0)
        value = np.where(wsum > 0, np.round(value, 4), np.nan)
        conf = np.where(wsum > 0, np.round(conf, 3), np.nan)
        out[meter] = (value, conf, names)
    return out


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
    """The meters of each slot, using only evidence available by the slot's end (or now).

    `previous` is the stored result of the slot before the first one, for its deltas.
    """
    weights = weights or load_weights()
    keys = sorted(set(slots), key=lambda k: (k.local_date, k.slot))
    if not keys:
        return []
    sl = slot_arrays(keys, tz, boundaries, now)
    inputs = all_inputs(
        Readings(readings, tz),
        Events(events),
        sl,
        weights.targets,
        weights.step_priority,
        weights.calendar_rules(),
        boundaries[0],
    )
    combined = _combine_all(inputs, weights, len(keys))
    lists = {name: _lists(inp) for name, inp in inputs.items()}
    values = {m: (v.tolist(), c.tolist(), names) for m, (v, c, names) in combined.items()}
    out: list[SlotMeters] = []
    prev = previous
    for i, key in enumerate(keys):
        meters = {}
        for m in METERS:
            v_list, c_list, names = values[m]
            meters[m] = _meter(i, m, v_list[i], c_list[i], names, inputs, lists, weights)
        deltas: dict[str, float | None] = {}
        linked = prev is not None and prev.key == key.prev()
        for m in METERS:
            before = prev.meters[m].value if linked and prev else None
            after = meters[m].value
            deltas[m] = (
                round(after - before, 4) if after is not None and before is not None else None
            )
        current = SlotMeters(key, meters, deltas, weights.version)
        out.append(current)
        prev = current
    return out


def _meter(
    i: int,
    meter: str,
    value: float,
    confidence: float,
    names: list[str],
    inputs: dict[str, InputArray],
    lists: dict[str, tuple[list[float], list[float], list[float]]],
    weights: Weights,
) -> MeterValue:
    if value != value:  # NaN: no input had evidence
        return MeterValue(
            None, None, {"reason": REASONS[meter], "mapping_version": weights.version}
        )
    table = weights.meters[meter]
    used = [n for n in names if lists[n][0][i] == lists[n][0][i]]
    w_used = sum(table[n] for n in used)
    detail = []
    for name in sorted(used):
        score, conf, raw = lists[name][0][i], lists[name][1][i], lists[name][2][i]
        item: dict[str, Any] = {
            "name": name,
            "score": score,
            "weight": table[name],
            "confidence": conf,
            "effect": round(table[name] * (score - 0.5) / w_used, 4),
        }
        if raw == raw:
            item["value"] = raw
        inp = inputs[name]
        if inp.unit:
            item["unit"] = inp.unit
        if inp.baseline is not None:
            base = {k: round(v, 3) for k, v in inp.baseline(i).items() if v == v}
            if base:
                item["baseline"] = base
        detail.append(item)
    return MeterValue(
        value,
        confidence,
        {
            "inputs": detail,
            "missing": sorted(n for n, w in table.items() if w > 0 and n not in used),
            "mapping_version": weights.version,
        },
    )
