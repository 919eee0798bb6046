"""Health Auto Export (the iOS app's "REST API" automation, or its JSON files) -> readings.

The app posts `{"data": {"metrics": [...], "workouts": [...]}}`. Each metric has a `name`,
`units` and `data[]` of `{date, qty}` (heart rate: `Min`/`Avg`/`Max`); `sleep_analysis` is
either one summary per night ("Summarize Data" on: `sleepStart`/`sleepEnd` or
`inBedStart`/`inBedEnd` plus hours asleep/core/deep/REM/awake/in bed) or one item per
stage interval (`startDate`, `endDate`, `value`). Dates are "yyyy-MM-dd HH:mm:ss Z"
(12-hour clocks and the narrow no-break space of newer iOS versions occur too).

The body is read as a stream of JSON events (ijson), never as one document: a first push
that backfills a year of minute heart rate is 50 MB of JSON, half a million items.

When the app summarises, one item stands for a bucket (a minute, an hour, a day) that
starts at `date`; the push says which in its `automation-aggregation` header, and older
versions say nothing, so a metric's bucket is inferred from its first two items (items a
day apart at midnight are days, an hour apart on the hour are hours). A bucket is stored as
[date, date + bucket), so the same bucket pushed again, larger, replaces the stored one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import IO, Any

from bridge.errors import InputError
from connectors.base import ReadContext, ReadingRecord, Skipped
from connectors.live import packed_sleep

KIND = "health-auto-export"
SOURCE = "apple_push"

# The app's metric name -> (our metric, unit stored, {their unit: factor to ours}).
METRICS: dict[str, tuple[str, str, dict[str, float]]] = {
    "heart_rate": ("heart_rate", "count/min", {"count/min": 1, "bpm": 1, "count/s": 60}),
    "resting_heart_rate": ("resting_hr", "count/min", {"count/min": 1, "bpm": 1, "count/s": 60}),
    "heart_rate_variability": ("hrv_sdnn", "ms", {"ms": 1, "s": 1000}),
    "step_count": ("steps", "count", {"count": 1, "steps": 1}),
    "respiratory_rate": ("respiratory_rate", "count/min", {"count/min": 1, "count/s": 60}),
    "active_energy": ("active_energy", "kcal", {"kcal": 1, "cal": 1, "kj": 1 / 4.184}),
    "mindful_minutes": ("mindful", "min", {"min": 1, "hr": 60, "s": 1 / 60}),
}
# Points in time (a rate or a level); everything else is an amount over its bucket.
POINT_METRICS = frozenset({"heart_rate", "resting_hr", "hrv_sdnn", "respiratory_rate"})
SLEEP = "sleep_analysis"
SLEEP_STAGES = {
    "core": "core",
    "deep": "deep",
    "rem": "rem",
    "awake": "awake",
    "in bed": "in_bed",
    "inbed": "in_bed",
    "asleep": "asleep",
    "unspecified": "asleep",
}
KM_PER = {"km": 1.0, "m": 0.001, "mi": 1.609344, "yd": 0.0009144, "ft": 0.0003048}
KCAL_PER = {"kcal": 1.0, "cal": 1.0, "kj": 1 / 4.184}
BUCKETS = {
    "seconds": timedelta(seconds=1),
    "minutes": timedelta(minutes=1),
    "hours": timedelta(hours=1),
    "days": timedelta(days=1),
}

_DATE = re.compile(
    r"(\d{4}-\d{2}-\d{2})[ T](\d{1,2}):(\d{2}):(\d{2})(?:[.,]\d+)?\s*([AaPp]\.?[Mm]\.?)?\s*"
    r"([+-]\d{2}:?\d{2}|Z)?$"
)
_ZONES: dict[str, timezone] = {}


@dataclass
class PushStats:
    """What a payload held besides readings: counted, reported, never fatal."""

    unknown: dict[str, int] = field(default_factory=dict)  # metric name -> items


def parse_date(text: Any, fallback: timezone | None = None) -> datetime:
    """ "2024-02-06 14:30:00 -0800", "2021-12-24 3:04:05 PM -0800", "2024-02-06" (a date:
    midnight in `fallback`, the offset of the payload's other dates)."""
    if not isinstance(text, str):
        raise ValueError(f"date {text!r} is not text")
    if len(text) == 25 and text[19] == " " and text[10] == " ":
        try:  # the app's usual "2024-02-06 14:30:00 -0800", at C speed
            return datetime.fromisoformat(text[:19] + text[20:])
        except ValueError:
            pass
    clean = text.replace("\u202f", " ").replace("\u00a0", " ").strip()
    if len(clean) == 10 and fallback is not None:
        return datetime.fromisoformat(clean).replace(tzinfo=fallback)
    m = _DATE.match(clean)
    if m is None or m.group(6) is None:
        raise ValueError(f"date {text!r} is not like '2024-02-06 14:30:00 -0800'")
    day, hour, minute, second, ampm, offset = m.groups()
    h = int(hour)
    if ampm:
        pm = ampm[0] in "Pp"
        if not 1 <= h <= 12:
            raise ValueError(f"date {text!r}: hour {h} with {ampm}")
        h = h % 12 + (12 if pm else 0)
    zone = _ZONES.get(offset)
    if zone is None:
        if offset == "Z":
            zone = UTC
        else:
            digits = offset.replace(":", "")
            delta = timedelta(hours=int(digits[1:3]), minutes=int(digits[3:5]))
            zone = timezone(-delta if digits[0] == "-" else delta)
        _ZONES[offset] = zone
    return datetime.fromisoformat(f"{day}T{h:02d}:{minute}:{second}").replace(tzinfo=zone)


def _factor(units: Any, table: dict[str, float], name: str) -> float:
    unit = str(units or "").strip().lower()
    if not unit:
        return 1.0
    factor = table.get(unit)
    if factor is None:
        raise ValueError(f"{name}: unit {units!r} is not one of {', '.join(sorted(table))}")
    return factor


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        try:
            return float(value)  # ijson gives Decimal
        except (TypeError, ValueError):
            raise ValueError(f"{name} {value!r} is not a number") from None
    return float(value)


def _source(item: dict[str, Any]) -> str:
    return str(item.get("source") or item.get("sleepSource") or "")[:200]


class _Metric:
    """One metric's items, converted as they stream past (its bucket found on the way)."""

    def __init__(self, name: str, units: Any, bucket: timedelta | None, stats: PushStats):
        self.name, self.units, self.stats = name, units, stats
        self.spec = METRICS.get(name)
        self.bucket = bucket
        self.pending: list[dict[str, Any]] = []
        if self.spec is not None:
            self.factor = _factor(units, self.spec[2], f"{name} units")

    def add(self, item: Any) -> list[ReadingRecord | Skipped]:
        if self.name == SLEEP:
            return _guard(SLEEP, item, _sleep_item)
        if self.spec is None:
            self.stats.unknown[self.name] = self.stats.unknown.get(self.name, 0) + 1
            return []
        if self.bucket is None and self.spec[0] not in POINT_METRICS:
            self.pending.append(item)
            if len(self.pending) < 2:
                return []
            self.bucket = _infer_bucket(self.pending)
            out = [r for p in self.pending for r in _guard(self.name, p, self._convert)]
            self.pending = []
            return out
        return _guard(self.name, item, self._convert)

    def finish(self) -> list[ReadingRecord | Skipped]:
        if not self.pending:
            return []
        self.bucket = _infer_bucket(self.pending)
        out = [r for p in self.pending for r in _guard(self.name, p, self._convert)]
        self.pending = []
        return out

    def _convert(self, item: dict[str, Any]) -> list[ReadingRecord]:
        metric, unit, _ = self.spec  # type: ignore[misc]
        start = parse_date(item.get("date"))
        raw = item.get("Avg", item.get("avg")) if "qty" not in item else item["qty"]
        if raw is None:
            raise ValueError("no qty or Avg")
        value = _number(raw, f"{self.name} value") * self.factor
        if metric in POINT_METRICS:
            end = start
        elif metric == "mindful":
            end = start + timedelta(minutes=value)
        else:
            end = start + (self.bucket or timedelta(minutes=1))
        return [ReadingRecord(metric, start, end, round(value, 4), unit, "", _source(item))]


def _infer_bucket(items: list[dict[str, Any]]) -> timedelta:
    """Items a day apart starting at midnight are days; an hour apart on the hour, hours;
    anything else (and a lone item not at midnight) a minute."""
    try:
        times = sorted({parse_date(i.get("date")) for i in items if isinstance(i, dict)})
    except ValueError:
        return timedelta(minutes=1)
    if not times:
        return timedelta(minutes=1)
    first = times[0]
    gap = times[1] - first if len(times) > 1 else timedelta(days=1)
    if (first.hour, first.minute, first.second) == (0, 0, 0) and gap >= timedelta(days=1):
        return timedelta(days=1)
    if (first.minute, first.second) == (0, 0) and gap >= timedelta(hours=1):
        return timedelta(hours=1)
    return timedelta(minutes=1)


def _guard(name: str, item: Any, convert: Any) -> list[ReadingRecord | Skipped]:
    if not isinstance(item, dict):
        return [Skipped(name, f"a {name} item is {type(item).__name__}, not an object")]
    try:
        return convert(item)
    except (KeyError, TypeError, ValueError, ArithmeticError, AttributeError) as err:
        return [Skipped(name, f"malformed {name} item ({err})"[:300])]


def _hours(item: dict[str, Any], key: str) -> float:
    value = item.get(key)
    return 0.0 if value is None else round(_number(value, key) * 60, 3)


def _sleep_item(item: dict[str, Any]) -> list[ReadingRecord]:
    origin = _source(item)
    if "startDate" in item:  # one stage interval
        value = str(item.get("value", "")).strip().lower()
        label = SLEEP_STAGES.get(value)
        if label is None:
            raise ValueError(f"sleep stage {item.get('value')!r}")
        start, end = parse_date(item["startDate"]), parse_date(item["endDate"])
        minutes = (end - start).total_seconds() / 60
        return [ReadingRecord("sleep", start, end, round(minutes, 3), "min", label, origin)]
    # One night's summary: its span and hours per stage, laid back to back.
    start = parse_date(item.get("sleepStart") or item["inBedStart"])
    end = parse_date(item.get("sleepEnd") or item["inBedEnd"])
    stages = {k: _hours(item, k) for k in ("deep", "core", "rem", "awake")}
    in_bed = _hours(item, "inBed") or round((end - start).total_seconds() / 60, 3)
    out = packed_sleep(start, end, in_bed, stages, origin)
    if item.get("inBedStart") and item.get("inBedEnd"):  # before HAE 6.6.2: its own span
        out[0].start, out[0].end = parse_date(item["inBedStart"]), parse_date(item["inBedEnd"])
    asleep = _hours(item, "asleep") or _hours(item, "totalSleep")
    if asleep > 0 and not any(stages[k] for k in ("deep", "core", "rem")):
        out.append(ReadingRecord("sleep", start, end, asleep, "min", "asleep", origin))
    # The app sends the night again, with other totals, as the watch syncs more of it:
    # its rows are one fact (connectors/base.py), replaced as one, never added beside.
    for rec in out:
        rec.revision = f"sleep:{end.date()}:{origin}"[:96]
    return out


def _workout(item: dict[str, Any]) -> list[ReadingRecord]:
    start, end = parse_date(item["start"]), parse_date(item["end"])
    activity = str(item.get("name") or "").replace(" ", "")[:64]
    origin = _source(item)
    minutes = (end - start).total_seconds() / 60
    out = [ReadingRecord("workout", start, end, round(minutes, 3), "min", activity, origin)]
    energy = item.get("activeEnergyBurned") or item.get("activeEnergy")
    if isinstance(energy, dict) and energy.get("qty") is not None:
        kcal = _number(energy["qty"], "activeEnergy") * _factor(
            energy.get("units"), KCAL_PER, "activeEnergy units"
        )
        out.append(
            ReadingRecord("workout_energy", start, end, round(kcal, 3), "kcal", activity, origin)
        )
    distance = item.get("distance")
    if isinstance(distance, dict) and distance.get("qty") is not None:
        km = _number(distance["qty"], "distance") * _factor(
            distance.get("units"), KM_PER, "distance units"
        )
        out.append(
            ReadingRecord("workout_distance", start, end, round(km, 4), "km", activity, origin)
        )
    return out


def read_stream(
    body: IO[bytes], ctx: ReadContext, *, aggregation: str | None = None, stats: PushStats
) -> Iterator[ReadingRecord | Skipped]:
    """Records of one payload, streamed; InputError (one line) when it is not the app's JSON.

    `aggregation`: the push's `automation-aggregation` header ("minutes", "hours", "days").
    """
    import ijson

    state = _Payload(BUCKETS.get((aggregation or "").strip().lower()), stats)
    try:
        for prefix, event, value in json_events(body):
            if state.flat is not None:
                item = state.flat_event(prefix, event, value)
                if item is not None:
                    yield from state.item(item)
            elif state.builder is not None:
                yield from state.built(event, value)
            else:
                yield from state.structure(prefix, event, value)
    except (ValueError, ijson.JSONError) as err:  # bad JSON, bad UTF-8
        raise InputError(f"not valid JSON ({str(err).splitlines()[0][:120]})") from None
    if not state.has_data:
        raise InputError('not Health Auto Export JSON: expected {"data": {"metrics": [...]}}')


ITEM_PREFIX = "data.metrics.item.data.item"
WORKOUT_PREFIX = "data.workouts.item"
# Where a metric's name, units and data array are (its items: ITEM_PREFIX).
METRIC_PREFIXES = frozenset(
    {
        "data.metrics.item",
        "data.metrics.item.name",
        "data.metrics.item.units",
        "data.metrics.item.data",
    }
)
SCALAR_EVENTS = frozenset({"string", "number", "boolean", "null"})


class _Payload:
    """What read_stream remembers between parse events: the metric being read, the item
    being read (flat, or by a builder once it nests), and whether the body had data."""

    def __init__(self, bucket: Any, stats: PushStats) -> None:
        self.bucket, self.stats = bucket, stats
        self.builder: JsonBuilder | None = None
        self.building = ""  # what the builder builds: "nested", "metric" or "workout"
        self.nested_key = ""
        self.outer: dict[str, Any] = {}
        self.metric: _Metric | None = None
        self.buffered: list[Any] = []  # items of a metric whose name comes after its data
        self.name: str | None = None
        self.units: Any = None
        self.seen_data = False
        self.has_data = False
        self.flat: dict[str, Any] | None = None  # a metric item being read (key -> scalar)
        self.key = ""

    def flat_event(self, prefix: str, event: str, value: Any) -> dict[str, Any] | None:
        """An event inside a metric item; the item once it ends."""
        # Metric items are flat objects; only a nested value needs the builder.
        flat = self.flat
        assert flat is not None
        if event == "map_key" and prefix == ITEM_PREFIX:
            self.key = value
        elif event in SCALAR_EVENTS:
            flat[self.key] = value
        elif event == "end_map" and prefix == ITEM_PREFIX:
            self.flat = None
            return flat
        else:  # a nested object or list inside an item
            self.builder, self.building = JsonBuilder(event), "nested"
            self.nested_key, self.outer = self.key, flat
            self.flat = None
        return None

    def item(self, item: Any) -> list[ReadingRecord | Skipped]:
        if self.metric is not None:
            return self.metric.add(item)
        self.buffered.append(item)
        return []

    def built(self, event: str, value: Any) -> list[ReadingRecord | Skipped]:
        """An event for the builder; what the value it completes gives."""
        builder = self.builder
        assert builder is not None
        builder.event(event, value)
        if builder.depth != 0:
            return []
        item, self.builder = builder.value, None
        if self.building == "nested":
            self.outer[self.nested_key] = item
            self.flat = self.outer
            return []
        if self.building == "workout":
            return _guard("workout", item, _workout)
        return self.item(item)

    def structure(self, prefix: str, event: str, value: Any) -> Iterable[ReadingRecord | Skipped]:
        """An event outside any item: where items start, a metric's parts, the body's shape."""
        if prefix == ITEM_PREFIX:
            if event == "start_map":
                self.flat = {}
                return []
            if event == "start_array":
                self.builder, self.building = JsonBuilder(event), "metric"
                return []
            name = self.name or "metric"  # a scalar item: not an object
            return [Skipped(name, f"a {name} item is {event}")]
        if prefix == WORKOUT_PREFIX and event == "start_map":
            self.builder, self.building = JsonBuilder(event), "workout"
            return []
        if prefix in METRIC_PREFIXES:
            return self.metric_part(prefix, event, value)
        self.check_shape(prefix, event, value)
        return []

    def metric_part(self, prefix: str, event: str, value: Any) -> Iterator[ReadingRecord | Skipped]:
        if prefix == "data.metrics.item.name":
            self.name = str(value)
        elif prefix == "data.metrics.item.units":
            self.units = value
        elif prefix == "data.metrics.item.data":
            if event == "start_array":
                self.seen_data = True
                if self.name is not None:
                    self.metric = _Metric(self.name, self.units, self.bucket, self.stats)
        elif event == "start_map":
            self.metric, self.name, self.units, self.buffered = None, None, None, []
            self.seen_data = False
        elif event == "end_map":
            yield from self.end_metric()

    def end_metric(self) -> Iterator[ReadingRecord | Skipped]:
        if self.name is None:
            if self.seen_data:
                yield Skipped("metric", "a metric without a name")
            return
        if self.metric is None:
            self.metric = _Metric(self.name, self.units, self.bucket, self.stats)
        for item in self.buffered:
            yield from self.metric.add(item)
        yield from self.metric.finish()
        self.metric, self.buffered = None, []

    def check_shape(self, prefix: str, event: str, value: Any) -> None:
        """InputError (one line) where the body is not the app's JSON; notes its data."""
        if prefix == "":
            if event not in ("start_map", "map_key", "end_map"):
                raise InputError("not Health Auto Export JSON: the body is not an object")
            if event == "map_key" and value == "data":
                self.has_data = True
        elif prefix == "data" and event not in ("start_map", "end_map", "map_key"):
            raise InputError("not Health Auto Export JSON: 'data' is not an object")
        elif prefix in ("data.metrics", "data.workouts") and event not in (
            "start_array",
            "end_array",
        ):
            raise InputError(f"not Health Auto Export JSON: '{prefix}' is not a list")


# Real pushes nest five levels deep. ijson names every event by its whole path, so a
# body of 100,000 opening brackets costs O(depth²): gigabytes from 200 KB.
MAX_DEPTH = 64
# ijson's C backend names every event of a buffer before the first reaches the depth
# check: with its default 64 KiB, 200 KB of brackets took 20 s before being refused.
# A 4 KiB buffer bounds that work (70 ms) and parses real payloads no slower.
PARSE_BUFFER = 4096


def json_events(body: IO[bytes]) -> Iterator[tuple[str, str, Any]]:
    """ijson's (path, event, value) of a pushed body, numbers as floats, depth bounded."""
    import ijson

    return bounded_depth(ijson.parse(body, use_float=True, buf_size=PARSE_BUFFER))


def bounded_depth(events: Iterator[tuple[str, str, Any]]) -> Iterator[tuple[str, str, Any]]:
    """ijson's parse events, refused past MAX_DEPTH levels of nesting."""
    depth = 0
    for prefix, event, value in events:
        if event == "start_map" or event == "start_array":
            depth += 1
            if depth > MAX_DEPTH:
                raise InputError(f"JSON nested deeper than {MAX_DEPTH} levels; refused")
        elif event == "end_map" or event == "end_array":
            depth -= 1
        yield prefix, event, value


class JsonBuilder:
    """Builds one JSON value from parse events (ijson's ObjectBuilder, with its depth)."""

    def __init__(self, first: str) -> None:
        import ijson

        self._b = ijson.ObjectBuilder()
        self.depth = 0
        self.event(first, None)

    def event(self, event: str, value: Any) -> None:
        if event in ("start_map", "start_array"):
            self.depth += 1
        elif event in ("end_map", "end_array"):
            self.depth -= 1
        self._b.event(event, value)

    @property
    def value(self) -> Any:
        return self._b.value


def read(path: Path, ctx: ReadContext) -> Iterator[ReadingRecord | Skipped]:
    """A JSON file the app wrote (its file automations write the same document)."""
    with open(path, "rb") as body:
        yield from read_stream(body, ctx, stats=PushStats())
