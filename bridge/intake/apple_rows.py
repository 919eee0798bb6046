"""Apple Health records straight to the fast writer's SQLite rows, for the common case.

An export holds millions of quantity samples (heart rate, energy, steps) written in one
fixed format: `2016-11-14 07:25:41 -0700`. Parsing each date, converting it to UTC,
building a record and checking it cost as much CPU as parsing the XML. Here a sample whose
every field is plainly ordinary becomes the row `ReadingWriter.add` would have written,
from strings: the UTC text of a date is its hour's UTC text (cached per hour and offset)
plus its own minutes and seconds. Anything else (another format, an offset with minutes,
a value out of range, a name with control characters, a day boundary, sleep, workouts,
HRV with beats) returns None and takes the ordinary path, which decides exactly as before;
tests/intake/test_apple_rows.py compares the two on awkward input.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from connectors.apple_health import QUANTITY_TYPES, _device_name
from connectors.validate import EARLIEST, FUTURE_SLACK, RANGES

# Every valid "MM:SS" of a date's tail; a set lookup validates both at once.
_MINUTES_SECONDS = frozenset(f"{m:02d}:{s:02d}" for m in range(60) for s in range(60))
# Metrics this path writes: the plain quantity samples (HRV SDNN may carry beats).
# type -> (metric, lowest, highest plausible value, whether kJ become kcal)
_FAST: dict[str, tuple[str, float, float, bool]] = {
    kind: (metric, *RANGES[metric], metric == "active_energy")
    for kind, metric in QUANTITY_TYPES.items()
    if metric != "hrv_sdnn"
}
_MISS: Any = object()
_HOUR = timedelta(hours=1)
_CACHE_LIMIT = 200_000  # about 23 years of hours; cleared, never grown past it


def _stored(value: datetime) -> str:
    # The fast writer's stored form (ingest._sqlite_datetime) of a whole-second instant.
    return value.astimezone(UTC).isoformat(" ")[:19] + ".000000"


class AppleRows:
    """A `fast` hook for `connectors.apple_health.read`: Record attributes -> a row tuple
    in `ingest.READING_COLUMNS` order, or None for the ordinary path."""

    def __init__(self, source: str, stamp: str, wall_clock: datetime) -> None:
        self.source = source
        self.stamp = stamp
        # The ordinary path's bounds, as stored text (ingest.ReadingWriter.add).
        self.lo = _stored(EARLIEST)
        self.hi = _stored(wall_clock + FUTURE_SLACK)
        self.hours: dict[str, tuple[str, int] | None] = {}
        self.names: dict[tuple[str, str], str | None] = {}
        self.units: dict[str, bool] = {}

    def hour(self, key: str) -> tuple[str, int] | None:
        """("2016-11-14 14:", -420) for "2016-11-14 07:" + " -0700"; None if not simple."""
        found = self.hours.get(key, False)
        if found is not False:
            return found  # type: ignore[return-value]
        result: tuple[str, int] | None = None
        # "YYYY-MM-DD HH:" then " ±HHMM": another shape takes the ordinary path.
        shaped = (
            len(key) == 20
            and key[4] == key[7] == "-"
            and key[10] == key[14] == " "
            and key[13] == ":"
            and key[15] in "+-"
        )
        # key = text[:14] + text[19:]: the date, the hour and its colon, the separator and
        # the offset; the ordinary path drops text[19] before fromisoformat, so does this.
        try:
            if not shaped:
                raise ValueError(key)
            local = datetime.fromisoformat(key[:14] + "00:00" + key[15:])
            offset = local.utcoffset()
            if offset is not None and not offset % _HOUR and key[11:13] < "24":
                result = (_stored(local)[:14], int(offset.total_seconds() // 60))
        except (ValueError, OverflowError):
            result = None
        if len(self.hours) >= _CACHE_LIMIT:
            self.hours.clear()
        self.hours[key] = result
        return result

    def name(self, origin: str, device: str) -> str | None:
        """The device's short name if origin and device pass the writer's text checks."""
        key = (origin, device)
        if key in self.names:
            return self.names[key]
        name = _device_name(device) if device else ""
        ok = len(origin) <= 200 and len(name) <= 300 and origin.isprintable() and name.isprintable()
        if len(self.names) >= 10_000:
            self.names.clear()
        self.names[key] = name if ok else None
        return self.names[key]

    def __call__(self, a: dict[str, str]) -> tuple[Any, ...] | None:
        # Runs once per sample of multi-GB exports: locals and one dict lookup per cache.
        fast = _FAST.get(a.get("type", ""))
        if fast is None:
            return None
        metric, low, high, energy = fast
        first = a.get("startDate")
        last = a.get("endDate")
        text = a.get("value")
        if first is None or last is None or text is None:
            return None
        start = self._moment(first)
        if start is None:
            return None
        start_db = start[0]
        if last == first:
            end_db = start_db
        else:
            end = self._moment(last)
            if end is None:
                return None
            end_db = end[0]
            # A reading across a UTC midnight gets the ordinary path's span check.
            if end_db[:10] != start_db[:10] or end_db < start_db:
                return None
        if not self.lo <= start_db <= self.hi:
            return None
        reading = self._reading(text, a.get("unit", ""), energy, low, high)
        if reading is None:
            return None
        origin = a.get("sourceName", "")
        raw = a.get("device") or ""
        device = self.names.get((origin, raw), _MISS)
        if device is _MISS:
            device = self.name(origin, raw)
        if device is None:
            return None
        value, unit = reading
        return (
            self.source,
            metric,
            origin,
            start_db,
            end_db,
            start[1],
            value,
            unit,
            "",
            device,
            "",
            self.stamp,
        )

    def _moment(self, text: str) -> tuple[str, int] | None:
        """An export timestamp as (stored UTC text, offset in minutes); None: the ordinary
        path decides."""
        tail = text[14:19]
        if len(text) != 25 or tail not in _MINUTES_SECONDS:
            return None
        key = text[:14] + text[19:]
        hour = self.hours.get(key, _MISS)
        if hour is _MISS:
            hour = self.hour(key)
        if hour is None:
            return None
        return hour[0] + tail + ".000000", hour[1]

    def _reading(
        self, text: str, unit: str, energy: bool, low: float, high: float
    ) -> tuple[float, str] | None:
        """(value, unit) of a sample in range with a printable unit (energy in kcal)."""
        try:
            value = float(text)
        except ValueError:
            return None
        if energy:
            if unit == "kJ":
                value /= 4.184
            unit = "kcal"
        if not low <= value <= high:  # NaN fails this too
            return None
        ok_unit = self.units.get(unit)
        if ok_unit is None:
            if len(self.units) >= 1000:
                self.units.clear()
            ok_unit = self.units[unit] = len(unit) <= 32 and unit.isprintable()
        return (value, unit) if ok_unit else None


FastHook = Callable[[dict[str, str]], "tuple[Any, ...] | None"]
