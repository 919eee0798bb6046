"""A generic readings CSV in long format: the way in for a device without a connector.

    start,end,metric,value,unit,source
    2026-11-18T23:10:00+01:00,2026-11-19T06:40:00+01:00,sleep,in_bed,,Oura
    2026-11-19T00:20:00+01:00,2026-11-19T01:35:00+01:00,sleep,deep,,Oura
    2026-11-19T06:40:00+01:00,,hrv_rmssd,42,ms,Oura
    2026-11-18,2026-11-19,steps,8412,count,Withings

One row, one reading. `start` and `end` are ISO 8601; without an offset they are read in
the person's zone, a date alone is local midnight. An empty `end` is an instant. `metric`
is one the meters read (UNITS below, the names of docs/reference/readings-csv.md);
`sleep` rows are spans whose `value` is the stage (in_bed, asleep, deep, light, rem,
awake; light is stored as core, as every source does). `unit` may be empty; when given it
must be one the metric accepts (no silent rescaling). `source` names the device (stored as
the origin; the stored source is `readings`). Unknown metrics and unreadable rows are
counted and skipped; a file without the needed columns is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, tzinfo
from pathlib import Path

from bridge.errors import InputError
from connectors.base import ReadContext, ReadingRecord, Skipped
from connectors.bundle import Bundle, csv_rows

KIND = "readings"
SOURCE = "readings"
DEFAULT_ORIGIN = "readings CSV"
COLUMNS = ("start", "end", "metric", "value", "unit", "source")
REQUIRED = ("start", "metric", "value")

_BPM = ("bpm", "count/min", "beats/min", "/min")
_SCORE = ("", "score", "%", "0-100")
# metric -> the unit it is stored in, then every spelling accepted for it.
UNITS: dict[str, tuple[str, ...]] = {
    "sleep": ("min",),  # the value column holds the stage; minutes come from the span
    "hrv_rmssd": ("ms", "milliseconds"),
    "hrv_sdnn": ("ms", "milliseconds"),
    "resting_hr": _BPM,
    "heart_rate": _BPM,
    "respiratory_rate": ("breaths/min", "count/min", "/min", "brpm"),
    "steps": ("count", "steps"),
    "stress": ("score", "0-100"),
    "recovery": ("%", "percent"),
    "restoration": ("score", "0-25"),  # as Fitbit's sleep score writes its part
    "body_battery": ("score", "0-100"),
    "sleep_score": _SCORE,
    "readiness_score": _SCORE,
    "workout": ("min", "minutes"),
    "mindful": ("min", "minutes"),
}
STAGES = {
    "in_bed": "in_bed",
    "asleep": "asleep",
    "deep": "deep",
    "light": "core",
    "core": "core",
    "rem": "rem",
    "awake": "awake",
}
# Metrics whose value is the span's length when the value column is empty.
SPAN_MINUTES = frozenset({"workout", "mindful"})


def read(path: Path, ctx: ReadContext) -> Iterator[ReadingRecord | Skipped]:
    """Yield a reading per row; unknown metrics and bad rows as Skipped."""
    path = Path(path)
    with Bundle(path, "readings CSV", single=True) as src:
        yield from _file(src, path.name, ctx)


def _file(src: Bundle, name: str, ctx: ReadContext) -> Iterator[ReadingRecord | Skipped]:
    where = src.where(name)
    hint = f"the first line names the columns {', '.join(COLUMNS)} (docs/reference/readings-csv.md)"
    empty = True
    for line, fields in csv_rows(src, name, REQUIRED, hint):
        empty = False
        metric = fields["metric"]
        if metric not in UNITS:
            yield Skipped("unknown metric", f"{where}:{line}: metric {metric!r}")
            continue
        try:
            yield _record(fields, metric, ctx.tz)
        except ValueError as err:
            yield Skipped(f"readings {metric}", f"{where}:{line}: {err}")
    if empty and not any(line.strip() for line in src.lines(name)):
        raise InputError(f"{where}: empty; the first line names the columns {', '.join(COLUMNS)}")


def _when(text: str, tz: tzinfo) -> datetime:
    if not text:
        raise ValueError("no start")
    if len(text) == 10:
        day = date.fromisoformat(text)
        return datetime(day.year, day.month, day.day, tzinfo=tz)
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo is not None else value.replace(tzinfo=tz)


def _record(fields: dict[str, str], metric: str, tz: tzinfo) -> ReadingRecord:
    start = _when(fields["start"], tz)
    end = _when(fields["end"], tz) if fields.get("end") else start
    if end < start:
        raise ValueError(f"end {fields['end']} before start {fields['start']}")
    units = UNITS[metric]
    unit = fields.get("unit", "")
    origin = fields.get("source") or DEFAULT_ORIGIN
    minutes = (end - start).total_seconds() / 60
    if metric == "sleep":
        label = STAGES.get(fields["value"].lower())
        if label is None:
            raise ValueError(
                f"sleep value {fields['value']!r}; one of in_bed, asleep, deep, light, rem, awake"
            )
        if end <= start:
            raise ValueError("a sleep stage is a span: give its end")
        return ReadingRecord("sleep", start, end, round(minutes, 3), "min", label, origin)
    if unit and unit.lower() not in units:
        raise ValueError(f"unit {unit!r} for {metric}; use {' or '.join(u for u in units if u)}")
    if not fields["value"] and metric in SPAN_MINUTES and end > start:
        value = minutes
    else:
        value = float(fields["value"])  # ValueError names the text
    return ReadingRecord(metric, start, end, value, units[0] or "score", "", origin)
