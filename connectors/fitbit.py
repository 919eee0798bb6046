"""Fitbit's own export files: a Google Takeout ZIP or folder, or a per-person folder.

Members are recognised by name wherever they sit, so the Takeout tree
(`Takeout/Fitbit/Global Export Data/...`, `.../Sleep Score/...`,
`.../Heart Rate Variability/...`, `.../Stress Score/...`), the older account export
(`user-site-export/...`) and the per-person layout of research datasets such as PMData
(`fitbit/sleep.json`, `sleep_score.csv`, ...) are one format:

    sleep[-YYYY-MM-DD].json              one entry per sleep log: startTime/endTime (local
                                         wall time), type "stages" (levels.data: wake,
                                         light, deep, rem, plus levels.shortData: wakes
                                         under 3 minutes laid over them) or "classic"
                                         (asleep, restless, awake), logId, dateOfSleep
    sleep_score.csv                      sleep_log_entry_id, timestamp, overall_score,
                                         revitalization_score (the restoration part)
    resting_heart_rate[-DATE].json       {dateTime, value: {date, value, error}}; 0 = none
    steps[-DATE].json                    per minute {dateTime, value: "<count>"}
    heart_rate-DATE.json                 per few seconds {dateTime, value: {bpm, ...}}
    {very,moderately,lightly}_active_minutes[-DATE].json   per day {dateTime, value}
    Daily Heart Rate Variability Summary - *.csv   timestamp, rmssd (ms), nremhr, entropy
    Daily Respiratory Rate Summary - *.csv         timestamp, daily_respiratory_rate
    Stress Score.csv                     DATE, STRESS_SCORE, ..., STATUS, CALCULATION_FAILED
    Daily Readiness Score - *.csv        date, readiness_score_value, ...

Times are local wall times without an offset (Takeout's `MM/DD/YY HH:MM:SS`, or ISO);
they are read in the person's zone. The sleep score's timestamp carries a "Z" that is
really the local end of the night, so a score is dated at the end of its sleep log (by
`sleep_log_entry_id`) and only falls back to its own timestamp, as wall time. Per-minute
steps and heart-rate samples are summed (steps) or averaged (heart rate) per local hour:
years of them would be tens of millions of rows the meters never need finer.

Fitbit's HRV is RMSSD (`hrv_rmssd`). The stress management score runs the other way from
Garmin's stress (high = calm), so it is kept as its own metric, `stress_score`, beside
the sleep score and the daily readiness score: vendor scores kept for reference.

The sleep score's restoration part (`revitalization_score`, 0-25: how far the sleeping
heart rate fell below the resting one, and how restless the night was) is stored beside
the score as `restoration`: an overnight recovery measure known at wake-up, which the
meters read as they read WHOOP's recovery (mappings/signals.py).

A night's rows (in-bed span, hypnogram) are one fact, `sleep:<dateOfSleep>`, and its
score another, `score:<dateOfSleep>` (with its restoration part): a newer export with a
re-scored or edited night replaces the earlier rows of that night (connectors/base.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

from bridge.errors import InputError
from connectors.base import ReadContext, ReadingRecord, Skipped
from connectors.bundle import Bundle, csv_rows

KIND = "fitbit"
SOURCE = "fitbit"
FOLDERS = True  # `import fitbit` also takes the unzipped folder
ORIGIN = "Fitbit"
MAX_JSON = 256 << 20  # a day of 2-second heart rate is ~6 MB; a month of minutes ~3 MB

# Fitbit's levels -> our sleep labels ("light" is N1+N2, which Apple calls core).
STAGES = {
    "wake": "awake",
    "light": "core",
    "deep": "deep",
    "rem": "rem",
    # classic logs (older devices, short or manual sleeps)
    "asleep": "asleep",
    "restless": "awake",
    "awake": "awake",
}
# A stretch the device lost the signal in: inside the in-bed span, in no stage.
UNKNOWN = "unknown"
ACTIVE = ("very", "moderately", "lightly")

_DATED = r"(-\d{4}-\d{2}-\d{2})?\.json$"
_SLEEP = re.compile(r"(^|/)sleep" + _DATED)
_SCORE = re.compile(r"(^|/)sleep_score\.csv$")
_RHR = re.compile(r"(^|/)resting_heart_rate" + _DATED)
_STEPS = re.compile(r"(^|/)steps" + _DATED)
_HR = re.compile(r"(^|/)heart_rate-\d{4}-\d{2}-\d{2}\.json$")
_ACTIVE = re.compile(r"(^|/)(very|moderately|lightly)_active_minutes" + _DATED)
_HRV = re.compile(r"(^|/)Daily Heart Rate Variability Summary[^/]*\.csv$")
_RESP = re.compile(r"(^|/)Daily Respiratory Rate Summary[^/]*\.csv$")
_STRESS = re.compile(r"(^|/)Stress Score\.csv$")
_READY = re.compile(r"(^|/)Daily Readiness Score[^/]*\.csv$")

# What one malformed entry or row raises while being converted.
_MALFORMED = (KeyError, TypeError, ValueError, AttributeError, OverflowError, IndexError)


def wanted(name: str) -> bool:
    """Whether a member is one this reader reads (the folder hash covers only these)."""
    return any(pattern.search(name) for pattern, _ in _FAMILIES)


class _Nights:
    """Where each sleep log ended and which night it is, for dating its score."""

    def __init__(self) -> None:
        self.by_log: dict[str, tuple[datetime, str]] = {}


def read(path: Path, ctx: ReadContext) -> Iterator[ReadingRecord | Skipped]:
    """Yield the readings of every known file of the export, sleep logs first."""
    path = Path(path)
    nights = _Nights()
    with Bundle(path, "Fitbit export") as bundle:
        found = False
        for pattern, reader in _FAMILIES:
            for name in bundle.names:
                if pattern.search(name):
                    found = True
                    yield from reader(bundle, name, ctx, nights)
    if not found:
        raise InputError(
            f"{path}: no sleep*.json, sleep_score.csv, resting_heart_rate*.json, steps*.json "
            "or Fitbit CSV summaries inside; is this a Fitbit export (Google Takeout or "
            "the per-person folder)?"
        )


# ---------------------------------------------------------------------------- parsing


def _wall(text: Any, tz: tzinfo) -> datetime:
    """A Fitbit local time: "MM/DD/YY HH:MM:SS", "YYYY-MM-DD HH:MM:SS", ISO with ".000"
    or a "Z" that is not UTC (see the module docstring)."""
    raw = str(text).strip()
    if len(raw) > 2 and raw[2] == "/":
        fmt = "%m/%d/%y %H:%M:%S" if " " in raw else "%m/%d/%y"
        naive = datetime.strptime(raw, fmt)
    else:
        naive = datetime.fromisoformat(raw.removesuffix("Z"))
    return naive if naive.tzinfo is not None else naive.replace(tzinfo=tz)


def _day(value: date, tz: tzinfo) -> tuple[datetime, datetime]:
    nxt = value + timedelta(days=1)
    return (
        datetime(value.year, value.month, value.day, tzinfo=tz),
        datetime(nxt.year, nxt.month, nxt.day, tzinfo=tz),
    )


def _num(value: Any) -> float | None:
    """A number, from a number or the string Fitbit often writes; None when empty."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    return float(value)


def _plus(start: datetime, seconds: float) -> datetime:
    # In UTC: wall-clock arithmetic would stretch a stage over a DST change.
    return (start.astimezone(UTC) + timedelta(seconds=seconds)).astimezone(start.tzinfo)


def _json(bundle: Bundle, name: str) -> list[Any]:
    try:
        doc = json.loads(bundle.read(name, MAX_JSON).decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"{bundle.where(name)} is not valid JSON ({err})") from None
    if not isinstance(doc, list):
        raise InputError(f"{bundle.where(name)}: a list of entries was expected")
    return doc


def _rows(bundle: Bundle, name: str, needed: tuple[str, ...]) -> Iterator[dict[str, str]]:
    for _, row in csv_rows(bundle, name, needed, "is this Fitbit's own file?"):
        yield row


def _each(
    what: str,
    bundle: Bundle,
    name: str,
    entries: Iterator[Any] | list[Any],
    convert: Callable[[Any], list[ReadingRecord]],
) -> Iterator[ReadingRecord | Skipped]:
    """Convert entry by entry; a malformed one is a Skipped, never half-read."""
    for entry in entries:
        try:
            records = convert(entry)
        except _MALFORMED as err:
            yield Skipped(f"fitbit {what}", f"{bundle.where(name)}: unreadable {what} ({err})")
            continue
        yield from records


# ---------------------------------------------------------------------------- families

Reader = Callable[[Bundle, str, ReadContext, _Nights], Iterator[ReadingRecord | Skipped]]


def _sleep(
    bundle: Bundle, name: str, ctx: ReadContext, nights: _Nights
) -> Iterator[ReadingRecord | Skipped]:
    def convert(log: dict[str, Any]) -> list[ReadingRecord]:
        records = sleep_records(log, ctx.tz)
        if records:
            nights.by_log[str(log.get("logId", ""))] = (records[0].end, str(log["dateOfSleep"]))
        return records

    yield from _each("sleep log", bundle, name, _json(bundle, name), convert)


def sleep_records(log: dict[str, Any], tz: tzinfo) -> list[ReadingRecord]:
    """A sleep log's in-bed span and hypnogram (short wakes cut out of the stages)."""
    start, end = _wall(log["startTime"], tz), _wall(log["endTime"], tz)
    if end <= start:
        raise ValueError(f"sleep log ends ({log['endTime']}) before it starts")
    night = str(date.fromisoformat(str(log["dateOfSleep"])[:10]))
    in_bed = _num(log.get("timeInBed")) or (end - start).total_seconds() / 60
    out = [ReadingRecord("sleep", start, end, float(in_bed), "min", "in_bed", ORIGIN)]
    levels = log.get("levels") or {}
    spans = [_level(entry, tz) for entry in levels.get("data") or []]
    spans = [span for span in spans if span[2] != UNKNOWN]
    wakes = [_level(entry, tz) for entry in levels.get("shortData") or []]
    wakes = sorted((a, b, "awake") for a, b, label in wakes if label == "awake")
    for a, b, label in spans:
        pieces = _without(a, b, wakes) if label != "awake" else [(a, b)]
        for s, e in pieces:
            minutes = (e - s).total_seconds() / 60
            out.append(ReadingRecord("sleep", s, e, round(minutes, 3), "min", label, ORIGIN))
    for a, b, label in wakes:
        minutes = (b - a).total_seconds() / 60
        out.append(ReadingRecord("sleep", a, b, round(minutes, 3), "min", label, ORIGIN))
    for rec in out:
        rec.revision = f"sleep:{night}"
    return out


def _level(entry: dict[str, Any], tz: tzinfo) -> tuple[datetime, datetime, str]:
    level = str(entry["level"]).lower()
    label = UNKNOWN if level == UNKNOWN else STAGES.get(level)
    if label is None:
        raise ValueError(f"unknown sleep level {entry['level']!r}")
    start = _wall(entry["dateTime"], tz)
    seconds = float(entry["seconds"])
    if seconds <= 0:
        raise ValueError(f"a sleep level of {seconds:g} seconds")
    return start, _plus(start, seconds), label


def _without(
    start: datetime, end: datetime, holes: list[tuple[datetime, datetime, str]]
) -> list[tuple[datetime, datetime]]:
    """[start, end) minus the (sorted) holes."""
    out: list[tuple[datetime, datetime]] = []
    cursor = start
    for a, b, _ in holes:
        if b <= cursor or a >= end:
            continue
        if a > cursor:
            out.append((cursor, a))
        cursor = max(cursor, b)
    if cursor < end:
        out.append((cursor, end))
    return out


def _score(
    bundle: Bundle, name: str, ctx: ReadContext, nights: _Nights
) -> Iterator[ReadingRecord | Skipped]:
    def convert(row: dict[str, str]) -> list[ReadingRecord]:
        value = _num(row["overall_score"])
        if value is None or value <= 0:
            return []  # a night Fitbit could not score
        known = nights.by_log.get(row.get("sleep_log_entry_id", "").strip())
        if known is not None:
            when, night = known
        else:
            when = _wall(row["timestamp"], ctx.tz)
            night = str(when.date())
        records = [ReadingRecord("sleep_score", when, when, value, "score", "", ORIGIN)]
        restoration = _num(row.get("revitalization_score"))
        if restoration is not None and restoration > 0:
            records.append(
                ReadingRecord("restoration", when, when, restoration, "score", "", ORIGIN)
            )
        for rec in records:
            rec.revision = f"score:{night}"
        return records

    rows = _rows(bundle, name, ("timestamp", "overall_score"))
    yield from _each("sleep score", bundle, name, rows, convert)


def _resting(
    bundle: Bundle, name: str, ctx: ReadContext, nights: _Nights
) -> Iterator[ReadingRecord | Skipped]:
    def convert(entry: dict[str, Any]) -> list[ReadingRecord]:
        inner = entry["value"]
        value = _num(inner["value"])
        if not value:
            return []  # 0: a day without enough heart rate to tell
        when = inner.get("date") or entry["dateTime"]
        start, end = _day(_wall(when, ctx.tz).date(), ctx.tz)
        return [ReadingRecord("resting_hr", start, end, value, "bpm", "", ORIGIN)]

    yield from _each("resting heart rate", bundle, name, _json(bundle, name), convert)


def _active(
    bundle: Bundle, name: str, ctx: ReadContext, nights: _Nights
) -> Iterator[ReadingRecord | Skipped]:
    match = _ACTIVE.search(name)
    level = match.group(2) if match else ""

    def convert(entry: dict[str, Any]) -> list[ReadingRecord]:
        value = _num(entry["value"])
        if value is None:
            return []
        start, end = _day(_wall(entry["dateTime"], ctx.tz).date(), ctx.tz)
        return [ReadingRecord("active_minutes", start, end, value, "min", level, ORIGIN)]

    yield from _each("active minutes", bundle, name, _json(bundle, name), convert)


def _hourly(
    *,
    what: str,
    metric: str,
    unit: str,
    label: str,
    value_of: Callable[[Any], float | None],
    mean: bool,
) -> Reader:
    """A reader of per-minute (or finer) samples, summed or averaged per local hour."""

    def reader(
        bundle: Bundle, name: str, ctx: ReadContext, nights: _Nights
    ) -> Iterator[ReadingRecord | Skipped]:
        # Grouped by the hour as written ("MM/DD/YY HH" or "YYYY-MM-DD HH"): a month of
        # minutes parses 720 times, not 43,200.
        hours: dict[str, list[float]] = {}
        bad = 0
        first = ""
        for entry in _json(bundle, name):
            try:
                value = value_of(entry["value"])
                stamp = str(entry["dateTime"])
            except _MALFORMED as err:
                bad += 1
                first = first or repr(err)
                continue
            if value is None:
                continue
            acc = hours.setdefault(stamp[:11] if stamp[2:3] == "/" else stamp[:13], [0.0, 0.0])
            acc[0] += value
            acc[1] += 1
        out: list[ReadingRecord] = []
        for key, (total, count) in hours.items():
            try:
                hour = _wall(key + ":00:00", ctx.tz)
            except _MALFORMED as err:
                bad += int(count)
                first = first or repr(err)
                continue
            value = round(total / count, 2) if mean else total
            out.append(ReadingRecord(metric, hour, _plus(hour, 3600), value, unit, label, ORIGIN))
        if bad:
            yield Skipped(
                f"fitbit {what}", f"{bundle.where(name)}: {bad} unreadable samples ({first})"
            )
        yield from sorted(out, key=lambda r: r.start)

    return reader


def _bpm(value: Any) -> float | None:
    bpm = _num(value["bpm"])
    return bpm if bpm else None


def _daily_csv(
    *, what: str, metric: str, unit: str, label: str, date_column: str, value_column: str
) -> Reader:
    """A CSV of one value per night or day, spanning that local day."""

    def reader(
        bundle: Bundle, name: str, ctx: ReadContext, nights: _Nights
    ) -> Iterator[ReadingRecord | Skipped]:
        def convert(row: dict[str, str]) -> list[ReadingRecord]:
            value = _num(row[value_column].strip())
            if not value:
                return []  # 0 or empty: not measured that night
            start, end = _day(_wall(row[date_column], ctx.tz).date(), ctx.tz)
            return [ReadingRecord(metric, start, end, value, unit, label, ORIGIN)]

        rows = _rows(bundle, name, (date_column, value_column))
        yield from _each(what, bundle, name, rows, convert)

    return reader


def _stress(
    bundle: Bundle, name: str, ctx: ReadContext, nights: _Nights
) -> Iterator[ReadingRecord | Skipped]:
    def convert(row: dict[str, str]) -> list[ReadingRecord]:
        failed = row.get("calculation_failed", "").strip().lower() == "true"
        value = _num(row["stress_score"].strip())
        if failed or not value:
            return []
        start, end = _day(_wall(row["date"], ctx.tz).date(), ctx.tz)
        return [ReadingRecord("stress_score", start, end, value, "score", "", ORIGIN)]

    rows = _rows(bundle, name, ("date", "stress_score"))
    yield from _each("stress score", bundle, name, rows, convert)


_FAMILIES: tuple[tuple[re.Pattern[str], Reader], ...] = (
    # Sleep logs first: the scores are dated by them.
    (_SLEEP, _sleep),
    (_SCORE, _score),
    (_RHR, _resting),
    (_ACTIVE, _active),
    (
        _STEPS,
        _hourly(what="steps", metric="steps", unit="count", label="", value_of=_num, mean=False),
    ),
    (
        _HR,
        _hourly(
            what="heart rate",
            metric="heart_rate",
            unit="bpm",
            label="hour_avg",
            value_of=_bpm,
            mean=True,
        ),
    ),
    (
        _HRV,
        _daily_csv(
            what="HRV summary",
            metric="hrv_rmssd",
            unit="ms",
            label="night",
            date_column="timestamp",
            value_column="rmssd",
        ),
    ),
    (
        _RESP,
        _daily_csv(
            what="respiratory rate",
            metric="respiratory_rate",
            unit="breaths/min",
            label="night",
            date_column="timestamp",
            value_column="daily_respiratory_rate",
        ),
    ),
    (_STRESS, _stress),
    (
        _READY,
        _daily_csv(
            what="readiness score",
            metric="readiness_score",
            unit="score",
            label="",
            date_column="date",
            value_column="readiness_score_value",
        ),
    ),
)
