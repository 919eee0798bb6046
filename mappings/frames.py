"""The two input frames of the meter mapper, made canonical, plus time helpers.

Pure: the pipeline (or a test, or a notebook) builds the frames; nothing here reads a file.

  readings: metric, start_utc, end_utc, value, label, origin, utc_offset_min
  events:   start_utc, end_utc, action, status, transparency, all_day, attendee_count, title

`utc_offset_min` (readings) and `title` (events) may be missing: the person's own zone and
an empty title are assumed. Instants become int64 nanoseconds since the epoch, because
every feature is a searchsorted or a cumulative sum over sorted arrays.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import Any

import numpy as np
import pandas as pd

from mappings.apple_paths import keep_mask
from mappings.vocabulary import USED_METRICS

READING_COLUMNS = ["metric", "start_utc", "end_utc", "value", "label", "origin", "utc_offset_min"]
# Optional: where the frame has it, Apple rows that two paths brought are resolved by it.
SOURCE_COLUMN = "source"
EVENT_COLUMNS = [
    "start_utc",
    "end_utc",
    "action",
    "status",
    "transparency",
    "all_day",
    "attendee_count",
    "title",
]
# USED_METRICS (imported above, kept importable here) is what the inputs of
# mappings/vocabulary.py read: heart_rate (minute samples) is none, resting_hr is its own.
__all__ = ["USED_METRICS"]

NS_PER_MIN = 60 * 10**9
NS_PER_HOUR = 60 * NS_PER_MIN
NS_PER_DAY = 24 * NS_PER_HOUR


def empty_readings() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object") for c in READING_COLUMNS})


def empty_events() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object") for c in EVENT_COLUMNS})


def to_ns(values: Any) -> np.ndarray:
    """Aware (or UTC-naive) instants -> int64 ns since the epoch, whatever pandas' unit."""
    idx = pd.DatetimeIndex(pd.to_datetime(values, utc=True, format="ISO8601"))
    return idx.as_unit("ns").asi8.copy()


def zone_offset_ns(instants_ns: np.ndarray, tz: tzinfo) -> np.ndarray:
    """The zone's UTC offset (ns) at each instant, DST included."""
    if len(instants_ns) == 0:
        return np.zeros(0, dtype=np.int64)
    utc = pd.DatetimeIndex(instants_ns.astype("datetime64[ns]"), tz="UTC")
    local = utc.tz_convert(tz).tz_localize(None).as_unit("ns").asi8
    return local - instants_ns


def epoch_day(local_ns: np.ndarray) -> np.ndarray:
    """Local wall-clock ns -> whole days since 1970-01-01 (the calendar date, as an int)."""
    return np.floor_divide(local_ns, NS_PER_DAY)


def _codes(col: pd.Series) -> np.ndarray:
    codes, _ = pd.factorize(col.fillna("").astype(str), sort=True)
    return codes


class Readings:
    """Readings as sorted numpy arrays, de-duplicated, with each record's local wall time.

    A record's local time uses the zone it was measured in: when its stored offset equals
    the person's zone at that instant it is "at home" and the zone (with DST) gives the
    offset of its end too; otherwise (travel) its own fixed offset is used for both ends.
    """

    def __init__(self, frame: pd.DataFrame, tz: tzinfo) -> None:
        f = frame[frame["metric"].isin(USED_METRICS)] if len(frame) else frame
        n = len(f)
        start = to_ns(f["start_utc"]) if n else np.zeros(0, dtype=np.int64)
        end = to_ns(f["end_utc"]) if n else np.zeros(0, dtype=np.int64)
        value = pd.to_numeric(f["value"], errors="coerce").to_numpy(dtype=float) if n else None
        if value is None:
            value = np.zeros(0)
        home_start = zone_offset_ns(start, tz)
        if n and "utc_offset_min" in f.columns:
            own = pd.to_numeric(f["utc_offset_min"], errors="coerce").to_numpy(dtype=float)
            own_ns = np.where(np.isnan(own), home_start, np.nan_to_num(own) * NS_PER_MIN)
            own_ns = own_ns.astype(np.int64)
        else:
            own_ns = home_start
        away = own_ns != home_start
        end_off = np.where(away, own_ns, zone_offset_ns(end, tz))
        metric = f["metric"].astype(str).to_numpy() if n else np.zeros(0, dtype=object)
        origin = f["origin"].fillna("").astype(str).to_numpy() if n else np.zeros(0, dtype=object)
        label = f["label"].fillna("").astype(str).to_numpy() if n else np.zeros(0, dtype=object)
        table = pd.DataFrame(
            {
                "metric": metric,
                "origin": origin,
                "label": label,
                "start": start,
                "end": np.maximum(end, start),
                "value": value,
                "local_start": start + own_ns,
                "local_end": np.maximum(end, start) + end_off,
            }
        )
        if n and SOURCE_COLUMN in f.columns:  # Apple data pushed and also imported: one path a day
            source = f[SOURCE_COLUMN].fillna("").astype(str).to_numpy()
            table = table[keep_mask(metric, source, epoch_day(table["local_start"].to_numpy()))]
        # Canonical order and no duplicates: results never depend on how rows arrived.
        table = table.drop_duplicates(subset=["metric", "origin", "label", "start", "end", "value"])
        if len(table):
            keys = [_codes(table[c]) for c in ("metric", "origin", "label")]
            order = np.lexsort(
                (
                    table["value"].fillna(-1.0).to_numpy(),
                    table["end"].to_numpy(),
                    table["start"].to_numpy(),
                    keys[2],
                    keys[1],
                    keys[0],
                )
            )
            table = table.iloc[order]
        self.table = table.reset_index(drop=True)
        self._by_metric = {str(m): g for m, g in self.table.groupby("metric", sort=False)}

    def metric(self, *names: str) -> pd.DataFrame:
        found = [self._by_metric[n] for n in names if n in self._by_metric]
        if len(found) == 1:
            return found[0]
        return pd.concat(found) if found else self.table.iloc[:0]


class Events:
    """Calendar events as a canonical frame with ns instants (cancelled ones dropped)."""

    def __init__(self, frame: pd.DataFrame) -> None:
        f = frame
        if len(f):
            f = f[f["status"].fillna("confirmed") != "cancelled"]
        n = len(f)
        table = pd.DataFrame(
            {
                "start": to_ns(f["start_utc"]) if n else np.zeros(0, dtype=np.int64),
                "end": to_ns(f["end_utc"]) if n else np.zeros(0, dtype=np.int64),
                "action": f["action"].fillna("UNCLASSIFIED").astype(str).to_numpy()
                if n
                else np.zeros(0, dtype=object),
                "busy": (f["transparency"].fillna("opaque") == "opaque").to_numpy(dtype=bool)
                if n
                else np.zeros(0, dtype=bool),
                "all_day": f["all_day"].fillna(False).astype(bool).to_numpy()
                if n
                else np.zeros(0, dtype=bool),
                "attendees": pd.to_numeric(f["attendee_count"], errors="coerce")
                .fillna(0)
                .to_numpy(dtype=float)
                if n
                else np.zeros(0),
                "title": f["title"].fillna("").astype(str).to_numpy()
                if n and "title" in f.columns
                else np.full(n, "", dtype=object),
            }
        )
        table["end"] = np.maximum(table["end"].to_numpy(), table["start"].to_numpy())
        table = table.drop_duplicates()
        if len(table):
            order = np.lexsort(
                (
                    _codes(table["title"]),
                    _codes(table["action"]),
                    table["end"].to_numpy(),
                    table["start"].to_numpy(),
                )
            )
            table = table.iloc[order]
        self.table = table.reset_index(drop=True)
