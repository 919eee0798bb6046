"""Samples posted by an iOS Shortcut -> readings. The format is ours, documented here and
in the README, so that a Shortcut built from "Find Health Samples" and "Get Contents of
URL" can produce it:

    {"samples": [
      {"type": "heart_rate", "value": 62, "unit": "count/min",
       "start": "2026-11-18T07:00:00+01:00", "end": "2026-11-18T07:00:00+01:00",
       "source": "Jane's Apple Watch"},
      {"type": "step_count", "value": 812, "start": "...", "end": "..."},
      {"type": "sleep", "stage": "Deep", "start": "...", "end": "..."}
    ]}

`type` is one of the Health Auto Export metric names this project reads (`heart_rate`,
`resting_heart_rate`, `heart_rate_variability`, `step_count`, `respiratory_rate`,
`active_energy`, `mindful_minutes`) or `sleep`; `unit` is optional (the metric's usual unit
is assumed; kJ and count/s are converted); `end` defaults to `start`; a sleep sample has a
`stage` (In Bed, Asleep, Awake, Core, Deep, REM). Dates are ISO 8601 with an offset (the
Shortcuts "ISO 8601" format) or Health Auto Export's "2026-11-18 07:00:00 +0100".
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

from bridge.errors import InputError
from connectors.base import ReadContext, ReadingRecord, Skipped
from connectors.health_auto_export import (
    METRICS,
    POINT_METRICS,
    SLEEP_STAGES,
    JsonBuilder,
    PushStats,
    json_events,
    parse_date,
)

KIND = "shortcut"
SOURCE = "apple_push"


def _when(text: Any) -> datetime:
    if isinstance(text, str) and "T" in text:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
        if value.tzinfo is None:
            raise ValueError(f"date {text!r} has no UTC offset")
        return value
    return parse_date(text)


def _sample(item: dict[str, Any], stats: PushStats) -> list[ReadingRecord]:
    kind = str(item.get("type", "")).strip()
    start = _when(item["start"])
    end = _when(item["end"]) if item.get("end") else start
    origin = str(item.get("source") or "")[:200]
    if kind == "sleep":
        stage = str(item.get("stage", "")).strip().lower()
        label = SLEEP_STAGES.get(stage)
        if label is None:
            raise ValueError(f"sleep stage {item.get('stage')!r}")
        minutes = (end - start).total_seconds() / 60
        return [ReadingRecord("sleep", start, end, round(minutes, 3), "min", label, origin)]
    spec = METRICS.get(kind)
    if spec is None:
        stats.unknown[kind or "?"] = stats.unknown.get(kind or "?", 0) + 1
        return []
    metric, unit, factors = spec
    given = str(item.get("unit") or "").strip().lower()
    factor = factors.get(given, 1.0 if not given else None)
    if factor is None:
        raise ValueError(f"{kind}: unit {item.get('unit')!r} is not one of {', '.join(factors)}")
    value = float(item["value"]) * factor
    if metric in POINT_METRICS:
        end = start
    elif metric == "mindful" and end == start:
        end = start + timedelta(minutes=value)
    return [ReadingRecord(metric, start, end, round(value, 4), unit, "", origin)]


def read_stream(
    body: IO[bytes], ctx: ReadContext, *, stats: PushStats
) -> Iterator[ReadingRecord | Skipped]:
    """Records of one Shortcut post, streamed; InputError when it is not that JSON."""
    import ijson

    builder: JsonBuilder | None = None
    seen = False
    try:
        for prefix, event, value in json_events(body):
            if builder is not None:
                builder.event(event, value)
                if builder.depth == 0:
                    item, builder = builder.value, None
                    yield from _guarded(item, stats)
            elif prefix == "samples.item":
                if event in ("start_map", "start_array"):
                    builder = JsonBuilder(event)
                else:
                    yield Skipped("sample", f"a sample is a {event}, not an object")
            elif prefix == "samples" and event == "start_array":
                seen = True
            elif prefix == "samples" and event != "end_array":
                raise InputError("not Shortcut JSON: 'samples' is not a list")
            elif prefix == "" and event not in ("start_map", "map_key", "end_map"):
                raise InputError('not Shortcut JSON: expected {"samples": [...]}')
    except (ValueError, ijson.JSONError) as err:  # bad JSON, bad UTF-8
        raise InputError(f"not valid JSON ({str(err).splitlines()[0][:120]})") from None
    if not seen:
        raise InputError('not Shortcut JSON: expected {"samples": [...]}')


def _guarded(item: Any, stats: PushStats) -> list[ReadingRecord | Skipped]:
    if not isinstance(item, dict):
        return [Skipped("sample", f"a sample is {type(item).__name__}, not an object")]
    try:
        return list(_sample(item, stats))
    except (KeyError, TypeError, ValueError, ArithmeticError) as err:
        return [Skipped(str(item.get("type") or "sample")[:48], f"malformed sample ({err})")]


def read(path: Path, ctx: ReadContext) -> Iterator[ReadingRecord | Skipped]:
    with open(path, "rb") as body:
        yield from read_stream(body, ctx, stats=PushStats())
