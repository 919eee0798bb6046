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
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, tzinfo
from functools import lru_cache
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
from mappings.freshness import (
    FreshnessRules,
    age_hours,
    human_age,
    meter_newest,
    metrics_of,
    newest_by_metric,
)
from mappings.inputs import InputArray, all_inputs, slot_arrays
from mappings.slots import DEFAULT_BOUNDARIES, SlotKey
from mappings.tasks import TASK_INPUTS, Tasks
from mappings.vocabulary import VENDOR_INPUTS, bundled_weights, null_reason

__all__ = [
    "EVENT_COLUMNS",
    "READING_COLUMNS",
    "MeterValue",
    "SlotMeters",
    "Weights",
    "WeightsError",
    "compute_slots",
    "empty_events",
    "empty_readings",
    "load_weights",
]

# Why a meter is null, by meter: the kinds of evidence its bundled inputs would need.
REASONS = {meter: null_reason(list(bundled_weights()[meter])) for meter in METERS}


@dataclass(frozen=True)
class Weights:
    version: str
    meters: dict[str, dict[str, float]]
    targets: dict[str, float]
    step_priority: tuple[str, ...] = ()
    focus_credit: dict[str, float] = field(default_factory=dict)
    deadline_keywords: tuple[str, ...] = ()
    # False: `[vendor_scores] as_inputs = false`, the vendors' composites left out.
    vendor_inputs: bool = True
    # Meters whose weights were fitted to the person (bridge/cycle/validity.py): their
    # provenance says so.
    fitted: frozenset[str] = frozenset()

    def calendar_rules(self) -> CalendarRules:
        words = "|".join(re.escape(w) for w in self.deadline_keywords) or r"(?!)"
        return CalendarRules(self.focus_credit, re.compile(rf"(?i)\b(?:{words})"))


class WeightsError(ValueError):
    """A weights file that cannot be used; the message names the file and the key."""


def load_weights(path: Path | None = None) -> Weights:
    """The bundled `mappings/meter_weights.toml`, with a person's own file laid over it.

    The own file needs a `version` and may change any weight, target or list; an input
    name that no meter knows is refused, so a typo does not silently drop an input.
    """
    bundled = files("mappings").joinpath("meter_weights.toml").read_text(encoding="utf-8")
    if path is None:
        return _parse_weights(bundled, "")
    try:
        own = Path(path).expanduser().read_text(encoding="utf-8")
    except OSError as err:
        raise WeightsError(f"{path}: cannot read the weights file ({err.strerror})") from None
    return _parse_weights(bundled, own, str(path))


@lru_cache(maxsize=8)
def _parse_weights(bundled: str, own: str, name: str = "") -> Weights:
    data = tomllib.loads(bundled)
    known = {k for m in METERS for k in data[m]}
    if own:
        try:
            mine = tomllib.loads(own)
        except tomllib.TOMLDecodeError as err:
            raise WeightsError(f"{name}: not valid TOML ({err})") from None
        if "version" not in mine:
            raise WeightsError(f"{name}: set `version`, so snapshots say which mapping made them")
        for section, values in mine.items():
            if isinstance(values, dict) and isinstance(data.get(section), dict):
                data[section] = {**data[section], **values}
            else:
                data[section] = values
    section = data.get("vendor_scores", {})
    vendor = section.get("as_inputs", True) if isinstance(section, dict) else section
    if not isinstance(vendor, bool):
        raise WeightsError(
            f"{name or 'meter_weights.toml'}: [vendor_scores] as_inputs is true or false"
        )
    try:
        meters = {m: {k: float(v) for k, v in data[m].items()} for m in METERS}
        targets = {k: float(v) for k, v in data["targets"].items()}
        focus = {k: float(v) for k, v in data.get("focus", {}).items()}
    except (AttributeError, TypeError, ValueError) as err:
        raise WeightsError(
            f"{name or 'meter_weights.toml'}: each meter is a table of numbers ({err})"
        ) from None
    for meter, table in meters.items():
        for key, weight in table.items():
            where = f"{name or 'meter_weights.toml'}: [{meter}] {key}"
            if key not in known:
                raise WeightsError(f"{where}: unknown input; known: {', '.join(sorted(known))}")
            if weight < 0:
                raise WeightsError(f"{where}: a weight cannot be negative")
    if not vendor:
        # Out of every meter, not weighted 0: provenance then does not list them.
        meters = {
            m: {k: w for k, w in t.items() if k not in VENDOR_INPUTS} for m, t in meters.items()
        }
    return Weights(
        str(data["version"]),
        meters,
        targets,
        tuple(data.get("steps", {}).get("priority", ())),
        focus,
        tuple(data.get("deadlines", {}).get("keywords", ())),
        vendor_inputs=vendor,
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


@dataclass
class _Combined:
    """One meter over all slots: value and confidence lists (NaN = null), and per input
    its effect list (NaN where the input had no evidence)."""

    value: list[float]
    confidence: list[float]
    effects: dict[str, list[float]]
    order: list[str]  # every input with a weight, sorted by name


def _combine_all(inputs: dict[str, InputArray], weights: Weights, n: int) -> dict[str, _Combined]:
    out = {}
    for meter in METERS:
        table = {k: w for k, w in weights.meters[meter].items() if w > 0}
        names = sorted(k for k in table if k in inputs)
        # Task inputs exist only for people with a task source; for everyone else they
        # must not lower the confidence (their meters stay exactly what they were).
        total_w = sum(w for k, w in table.items() if k in inputs or k not in TASK_INPUTS) or 1.0
        num, wsum, csum, k = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
        pulls = {}
        for name in names:
            inp = inputs[name]
            # Carried evidence pulls with the share of its weight it keeps.
            w = table[name] * (inp.weight if inp.weight is not None else 1.0)
            has = ~np.isnan(inp.score) & (w > 0)
            pulls[name] = np.where(has, w * (np.round(inp.score, 4) - 0.5), np.nan)
            num += np.nan_to_num(pulls[name])
            wsum += np.where(has, w, 0.0)
            csum += np.where(has, np.nan_to_num(inp.confidence), 0.0)
            k += has
        with np.errstate(invalid="ignore", divide="ignore"):
            value = np.where(wsum > 0, np.round(np.clip(0.5 + num / wsum, 0.0, 1.0), 4), np.nan)
            conf = np.where(
                wsum > 0, np.round(np.clip((wsum / total_w) * (csum / k), 0.0, 1.0), 3), np.nan
            )
            effects = {name: np.round(p / wsum, 4).tolist() for name, p in pulls.items()}
        out[meter] = _Combined(value.tolist(), conf.tolist(), effects, sorted(table))
    return out


@dataclass(frozen=True)
class MeterRules:
    """What shapes a person's meters besides the data: where their slots begin, the
    weights (None: the bundled ones), and when an input is stale or too unsure to show."""

    boundaries: tuple[time, ...] = DEFAULT_BOUNDARIES
    weights: Weights | None = None
    freshness: FreshnessRules = field(default_factory=FreshnessRules)


def compute_slots(
    readings: pd.DataFrame,
    events: pd.DataFrame,
    slots: list[SlotKey],
    *,
    tz: tzinfo,
    now: datetime | Mapping[SlotKey, datetime],
    rules: MeterRules | None = None,
    previous: SlotMeters | None = None,
    tasks: pd.DataFrame | None = None,
) -> list[SlotMeters]:
    """The meters of each slot, using only evidence available by the slot's end (or now).

    `now` may be given per slot (every slot must be in it): the validity report asks
    for each check-in's meters as of the moment it was said.
    `rules`: the person's slot boundaries, weights and freshness rules (default: the
    defaults). `previous` is the stored result of the slot before the first one, for its
    deltas.
    `tasks`: the person's task changes (`mappings.tasks.TASK_COLUMNS`), None without a
    task source. Each meter says how old its freshest input is (`mappings.freshness`);
    one older than the rules' `stale_after_hours` is marked stale, one below their
    `min_confidence` is withheld (null).
    """
    rules = rules or MeterRules()
    boundaries, freshness = rules.boundaries, rules.freshness
    weights = rules.weights or load_weights()
    keys = sorted(set(slots), key=lambda k: (k.local_date, k.slot))
    if not keys:
        return []
    sl = slot_arrays(keys, tz, boundaries, now)
    sl.carry_hours = freshness.stale_after_hours
    r, e = Readings(readings, tz), Events(events)
    inputs = all_inputs(
        r,
        e,
        sl,
        targets=weights.targets,
        priority=weights.step_priority,
        rules=weights.calendar_rules(),
        day_start=boundaries[0],
        tasks=Tasks(tasks) if tasks is not None and len(tasks) else None,
    )
    combined = _combine_all(inputs, weights, len(keys))
    lists = {name: _Lists.of(inp) for name, inp in inputs.items()}
    by_metric = newest_by_metric(r, e, sl.as_of)
    newest = {
        m: meter_newest(by_metric, metrics_of(combined[m].order), len(keys)).tolist()
        for m in METERS
    }
    as_of = sl.as_of.tolist()
    out: list[SlotMeters] = []
    prev = previous
    for i, key in enumerate(keys):
        meters = {
            m: _fresh(_meter(i, m, combined[m], lists, weights), newest[m][i], as_of[i], freshness)
            for m in METERS
        }
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


@dataclass
class _Lists:
    """An input's arrays as plain lists: per-slot access without numpy scalars."""

    score: list[float]
    confidence: list[float]
    raw: list[float]
    unit: str
    baseline: Any
    tasks: Any = None
    carried: list[float] | None = None

    @classmethod
    def of(cls, inp: InputArray) -> _Lists:
        return cls(
            np.round(inp.score, 4).tolist(),
            np.round(np.nan_to_num(inp.confidence, nan=0.0), 3).tolist(),
            np.round(inp.raw, 3).tolist(),
            inp.unit,
            inp.baseline,
            inp.tasks,
            None if inp.carried_hours is None else np.round(inp.carried_hours, 1).tolist(),
        )


def _meter(
    i: int, meter: str, c: _Combined, lists: dict[str, _Lists], weights: Weights
) -> MeterValue:
    value = c.value[i]
    if value != value:  # NaN: no input had evidence
        return MeterValue(
            None, None, {"reason": REASONS[meter], "mapping_version": weights.version}
        )
    table = weights.meters[meter]
    detail, missing = [], []
    for name in c.order:
        effect = c.effects[name][i] if name in c.effects else float("nan")
        if effect != effect:
            missing.append(name)
            continue
        inp = lists[name]
        item: dict[str, Any] = {
            "name": name,
            "score": inp.score[i],
            "weight": table[name],
            "confidence": inp.confidence[i],
            "effect": effect,
        }
        raw = inp.raw[i]
        if raw == raw:
            item["value"] = raw
        if inp.unit:
            item["unit"] = inp.unit
        if inp.baseline is not None:
            base = inp.baseline(i)
            if base:
                item["baseline"] = base
        if inp.tasks is not None:
            named = inp.tasks(i)
            if named:
                item["tasks"] = named
        if inp.carried is not None and inp.carried[i] > 0:
            # Carried past its own window: its weight here is the share it kept.
            item["carried_hours"] = inp.carried[i]
        detail.append(item)
    return MeterValue(
        value,
        c.confidence[i],
        {
            "inputs": detail,
            "missing": missing,
            "mapping_version": weights.version,
            **({"weights": "fitted to you"} if meter in weights.fitted else {}),
        },
    )


def _fresh(mv: MeterValue, newest_ns: int, as_of_ns: int, rules: FreshnessRules) -> MeterValue:
    """Add the meter's freshness to its provenance; withhold a value with too little evidence."""
    age = age_hours(newest_ns, as_of_ns)
    stale = age is None or age > rules.stale_after_hours
    mv.provenance["freshness"] = {
        "newest": None
        if newest_ns < 0
        else datetime.fromtimestamp(newest_ns // 10**9, UTC).isoformat().replace("+00:00", "Z"),
        "age_hours": age,
        "stale": stale,
    }
    if mv.value is None or mv.confidence is None or mv.confidence >= rules.min_confidence:
        return mv
    names = [item["name"] for item in mv.provenance.get("inputs", [])]
    old = f"; the newest input is {human_age(age)} old" if age is not None else ""
    mv.provenance["reason"] = (
        f"too little fresh evidence: confidence {mv.confidence:.2f} "
        f"from {', '.join(names) or 'nothing'}{old}"
    )
    mv.provenance["withheld"] = mv.value
    return MeterValue(None, None, mv.provenance)
