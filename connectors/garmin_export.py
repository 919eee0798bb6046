"""Garmin "Export your data" ZIP (garmin.com/account/datamanagement/exportdata).

Three families of JSON files carry what the meters need (any of them may be missing, and
Garmin writes some with a UTF-8 BOM):

    DI_CONNECT/DI-Connect-Aggregator/UDSFile_<from>_<to>.json     daily summaries:
        restingHeartRate, totalSteps, allDayStress, body battery
    DI_CONNECT/DI-Connect-Wellness/<from>_<to>_<user>_sleepData.json   one entry a night:
        GMT start/end strings, {deep,light,rem,awake}SleepSeconds, averageRespiration
    DI_CONNECT/DI-Connect-Wellness/<...>_healthStatusData.json     per day metrics[]:
        HRV (overnight RMSSD, ms), HR (resting), RESPIRATION

Monitoring and sleep FIT files that some exports carry (`*.fit` members) are read with
the FIT reader. The format is undocumented; unknown fields are ignored and a day missing a
field simply yields nothing for it. A daily value spans that local calendar day.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any

from bridge.errors import InputError
from connectors import fit
from connectors.archive import open_zip, read_member
from connectors.base import ReadContext, ReadingRecord, Skipped
from connectors.live import packed_sleep, wake_time

KIND = "garmin-export"
SOURCE = "garmin_export"

MAX_JSON = 256 << 20  # the largest UDS/sleep file of a decade-long account is a few MB
_UDS = re.compile(r"(^|/)UDSFile_[^/]*\.json$", re.IGNORECASE)
_SLEEP = re.compile(r"(^|/)[^/]*_sleepData\.json$", re.IGNORECASE)
_HEALTH = re.compile(r"(^|/)[^/]*_healthStatusData\.json$", re.IGNORECASE)
_FIT = re.compile(r"\.fit$", re.IGNORECASE)
MAX_FIT = 64 << 20
# Garmin's sleep stages -> ours ("light" is N1+N2, which Apple calls core).
STAGES = {"deep": "deep", "light": "core", "rem": "rem", "awake": "awake"}
ORIGIN = {"uds": "Garmin daily summary", "sleep": "Garmin sleep", "health": "Garmin health status"}


def read(path: Path, ctx: ReadContext) -> Iterator[ReadingRecord | Skipped]:
    """Yield the readings of every known file in the export."""
    path = Path(path)
    with open_zip(path, "Garmin export") as archive:
        members = sorted(
            (i for i in archive.infolist() if not i.is_dir()), key=lambda i: i.filename
        )
        found = False
        for pattern, reader in _FAMILIES:
            for info in members:
                if pattern.search(info.filename):
                    found = True
                    yield from reader(path, archive, info, ctx)
    if not found:
        raise InputError(
            f"{path}: no UDSFile_*.json, *_sleepData.json, *_healthStatusData.json or "
            "*.fit inside; is this a Garmin 'Export your data' ZIP?"
        )


# Reads one member of the export: its records, or a Skipped for an unreadable entry.
MemberReader = Callable[
    [Path, zipfile.ZipFile, zipfile.ZipInfo, ReadContext], Iterator[ReadingRecord | Skipped]
]


def _json_member(
    entry_reader: Callable[[dict[str, Any], ReadContext], Iterator[ReadingRecord]],
) -> Callable[
    [Path, zipfile.ZipFile, zipfile.ZipInfo, ReadContext], Iterator[ReadingRecord | Skipped]
]:
    """A member reader for a JSON file of per-day entries."""

    def member(
        path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo, ctx: ReadContext
    ) -> Iterator[ReadingRecord | Skipped]:
        doc = _json(path, info.filename, read_member(path, archive, info, MAX_JSON))
        for entry in _entries(doc):
            try:
                # A list of one entry's records, so a bad entry yields nothing half-read.
                records = list(entry_reader(entry, ctx))
            except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as err:
                day = str(entry.get("calendarDate", "")) if isinstance(entry, dict) else ""
                yield Skipped("garmin day", f"{info.filename}: unreadable entry {day!r}: {err}")
                continue
            yield from records

    return member


def _fit_member(
    path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo, ctx: ReadContext
) -> Iterator[ReadingRecord]:
    data = read_member(path, archive, info, MAX_FIT)
    yield from fit.records(io.BytesIO(data), f"{path}: {info.filename}", ctx)


def _json(path: Path, name: str, data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8-sig"))  # Garmin writes some files with a BOM
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"{path}: {name} is not valid JSON ({err})") from None


def _entries(doc: Any) -> Iterator[dict[str, Any]]:
    """The per-day objects, whether the file is a list or wraps one in an object."""
    if isinstance(doc, dict):
        lists = [v for v in doc.values() if isinstance(v, list)]
        doc = lists[0] if len(lists) == 1 else [doc]
    if isinstance(doc, list):
        yield from (e for e in doc if isinstance(e, dict))


def _stamp(value: Any) -> datetime | None:
    """A GMT instant: "2025-01-01T22:00:00.0" or epoch milliseconds."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value / 1000, UTC)
    text = str(value).replace(" ", "T")
    if "." in text:
        head, frac = text.split(".", 1)
        text = f"{head}.{frac[:6].ljust(6, '0')}"
    when = datetime.fromisoformat(text)
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _day_zone(entry: dict[str, Any], ctx: ReadContext) -> tzinfo:
    """The zone the day was lived in: Garmin's local/GMT pair if present, else the person's."""
    local, gmt = (
        _stamp(entry.get("wellnessStartTimeLocal")),
        _stamp(entry.get("wellnessStartTimeGmt")),
    )
    if local is not None and gmt is not None:
        return timezone(timedelta(minutes=round((local - gmt).total_seconds() / 60)))
    return ctx.tz


def _day(entry: dict[str, Any], ctx: ReadContext) -> tuple[datetime, datetime]:
    day = date.fromisoformat(str(entry["calendarDate"])[:10])
    tz = _day_zone(entry, ctx)
    start = datetime(day.year, day.month, day.day, tzinfo=tz)
    nxt = day + timedelta(days=1)
    return start, datetime(nxt.year, nxt.month, nxt.day, tzinfo=tz)


def _num(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number


def _uds(entry: dict[str, Any], ctx: ReadContext) -> Iterator[ReadingRecord]:
    """One day's summary, as one fact (`day:<calendarDate>`, as the API connector names
    it): importing a later export replaces the day's rows instead of adding to them."""
    if "calendarDate" not in entry:
        return
    records = list(_uds_records(entry, ctx))
    revision = f"day:{str(entry['calendarDate'])[:10]}"
    for rec in records:
        rec.revision = revision
    yield from records


def _uds_records(entry: dict[str, Any], ctx: ReadContext) -> Iterator[ReadingRecord]:
    start, end = _day(entry, ctx)
    origin = ORIGIN["uds"]
    rhr = _num(entry.get("restingHeartRate"))
    if rhr:
        yield ReadingRecord("resting_hr", start, end, rhr, "bpm", "", origin)
    steps = _num(entry.get("totalSteps"))
    if steps is not None:
        yield ReadingRecord("steps", start, end, steps, "count", "", origin)
    stress = entry.get("allDayStress") or {}
    for agg in stress.get("aggregatorList", []) if isinstance(stress, dict) else []:
        level = _num(agg.get("averageStressLevel"))
        kind = str(agg.get("type", "")).upper()
        # Negative levels mean "not enough data"; TOTAL is the whole day.
        if kind in ("TOTAL", "AWAKE", "ASLEEP") and level is not None and 0 <= level <= 100:
            label = "" if kind == "TOTAL" else kind.lower()
            yield ReadingRecord("stress", start, end, level, "score", label, origin)
    yield from _body_battery(entry, start, end, origin)


# Garmin's Body Battery stats -> the labels the Garmin API connector stores for the same
# facts (connectors/garmin.py), so the meters read both alike: the value at wake-up
# (the meters' input) and the day's highest and lowest (kept with the day, read by none).
# MOSTRECENT is whatever the watch showed at its last sync of the day, at no moment the
# export states: it describes no time the meters could use, and is not stored.
BODY_BATTERY = {"ATWAKETIME": "at_wake", "HIGHEST": "highest", "LOWEST": "lowest"}
BODY_BATTERY_FLAT = {
    "bodyBatteryAtWakeTime": "at_wake",
    "bodyBatteryHighestValue": "highest",
    "bodyBatteryLowestValue": "lowest",
}


def _body_battery(
    entry: dict[str, Any], start: datetime, end: datetime, origin: str
) -> Iterator[ReadingRecord]:
    """A day's Body Battery: at wake-up, dated at the wake-up as the API connector dates it
    (the day's SLEEP event; the day's start without one), and the day's highest and lowest."""
    values: dict[str, float] = {}
    block = entry.get("bodyBattery")
    if isinstance(block, dict):
        for stat in block.get("bodyBatteryStatList", []) or []:
            value = _num(stat.get("statsValue"))
            label = BODY_BATTERY.get(str(stat.get("bodyBatteryStatType", "")).upper())
            if value is not None and label:
                values[label] = value
    for key, label in BODY_BATTERY_FLAT.items():
        value = _num(entry.get(key))
        if value is not None:
            values.setdefault(label, value)
    woke = wake_time(entry, start, end)
    for label, value in sorted(values.items()):
        if not 0 <= value <= 100:
            continue
        if label == "at_wake":
            when = (woke or start).astimezone(start.tzinfo)
            yield ReadingRecord("body_battery", when, when, value, "score", label, origin)
        else:
            yield ReadingRecord("body_battery", start, end, value, "score", label, origin)


def _sleep(entry: dict[str, Any], ctx: ReadContext) -> Iterator[ReadingRecord]:
    start = _stamp(entry.get("sleepStartTimestampGMT"))
    end = _stamp(entry.get("sleepEndTimestampGMT"))
    if start is None or end is None or end <= start:
        return  # a day without a recorded night
    # The "Local" twin is wall time written as if it were UTC; the gap is the night's offset.
    local_start = _stamp(entry.get("sleepStartTimestampLocal"))
    zone: tzinfo = ctx.tz
    if local_start is not None:
        zone = timezone(timedelta(minutes=round((local_start - start).total_seconds() / 60)))
    start, end = start.astimezone(zone), end.astimezone(zone)
    origin = ORIGIN["sleep"]
    # Totals only: laid back to back from sleep start, as the Personal API's nights are.
    # (Each stage spanning the whole night made every stage's union the whole night, so
    # deep and REM shares were a third each whatever the watch measured.)
    minutes = {
        label: (_num(entry.get(f"{key}SleepSeconds")) or 0.0) / 60 for key, label in STAGES.items()
    }
    in_bed = (end - start).total_seconds() / 60
    records = packed_sleep(start, end, in_bed, minutes, origin)
    night = str(entry.get("calendarDate") or end.date())
    for rec in records:
        rec.revision = f"sleep:{night}"
    yield from records
    breaths = _num(entry.get("averageRespiration") or entry.get("averageRespirationValue"))
    if breaths and breaths > 0:
        yield ReadingRecord("respiratory_rate", start, end, breaths, "breaths/min", "sleep", origin)


def _health(entry: dict[str, Any], ctx: ReadContext) -> Iterator[ReadingRecord]:
    if "calendarDate" not in entry:
        return
    start, end = _day(entry, ctx)
    origin = ORIGIN["health"]
    metrics = {
        "HRV": ("hrv_rmssd", "ms"),
        "HR": ("resting_hr", "bpm"),
        "RESPIRATION": ("respiratory_rate", "breaths/min"),
    }
    for metric in entry.get("metrics", []) or []:
        key = metrics.get(str(metric.get("type", "")).upper())
        value = _num(metric.get("value"))
        if key is not None and value is not None and value > 0:
            yield ReadingRecord(key[0], start, end, value, key[1], "night", origin)


_FAMILIES = (
    (_UDS, _json_member(_uds)),
    (_SLEEP, _json_member(_sleep)),
    (_HEALTH, _json_member(_health)),
    (_FIT, _fit_member),
)
