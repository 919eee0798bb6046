"""WHOOP's "Export my data": a ZIP (or the folder it unzips to) of four CSV files.

    physiological_cycles.csv   one row per cycle: Cycle start time, Cycle end time, Cycle
                               timezone, Recovery score %, Resting heart rate (bpm), Heart
                               rate variability (ms), Average HR (bpm), Sleep onset, Wake
                               onset, ... (and the cycle's main sleep again)
    sleeps.csv                 one row per sleep or nap: Sleep onset, Wake onset, Cycle
                               timezone, Nap, Sleep performance %, Respiratory rate (rpm),
                               In bed / Light sleep / Deep (SWS) / REM / Awake duration (min)
    workouts.csv               Workout start time, Workout end time, Activity name, ...
    journal_entries.csv        Question text, Answered yes, Notes: intimate answers, read
                               only when `[sources.whoop] import_journal` is on (default off)

Times are local wall times ("2026-11-18 06:40:12") in the row's "Cycle timezone"
("UTC+01:00"), which changes when the person travels: each row is read in its own
offset. The records are the WHOOP API connector's (connectors/whoop.py): stored as source
`whoop`, with the same metrics, origins, labels and instants (whole seconds), so a night
both pulled from the API and exported is one set of rows. Sleep is an in-bed span with
stage totals packed from its onset (WHOOP has no hypnogram); recovery, RMSSD and resting
HR are dated at the wake onset of the cycle's sleep, as the API's are.

A night, a cycle and a workout are each one fact (`export-sleep:...`, `export-cycle:...`,
`export-workout:...`): a newer export with a re-scored or edited night replaces it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path

from bridge.errors import InputError
from connectors.base import ReadContext, ReadingRecord, Skipped
from connectors.bundle import Bundle, csv_rows
from connectors.live import packed_sleep

KIND = "whoop-export"
SOURCE = "whoop"  # the API connector's: one night is one set of rows whichever way it came
FOLDERS = True
ORIGIN = "whoop"
NAP_ORIGIN = "whoop-nap"

_CYCLES = re.compile(r"(^|/)physiological_cycles\.csv$")
_SLEEPS = re.compile(r"(^|/)sleeps\.csv$")
_WORKOUTS = re.compile(r"(^|/)workouts\.csv$")
_JOURNAL = re.compile(r"(^|/)journal_entries\.csv$")
_OFFSET = re.compile(r"^(?:UTC|GMT)?\s*([+-])(\d{1,2}):?(\d{2})?$")
_MALFORMED = (KeyError, TypeError, ValueError, OverflowError, IndexError)


def wanted(name: str) -> bool:
    """Whether a member is one this reader reads (the folder hash covers only these)."""
    return any(p.search(name) for p in (_CYCLES, _SLEEPS, _WORKOUTS, _JOURNAL))


def read(path: Path, ctx: ReadContext) -> Iterator[ReadingRecord | Skipped]:
    """Yield the readings of every file of the export."""
    path = Path(path)
    families: list[tuple[re.Pattern[str], Reader, tuple[str, ...]]] = [
        (_CYCLES, _cycle, ("cycle start time", "cycle timezone")),
        (_SLEEPS, _sleep, ("sleep onset", "wake onset", "cycle timezone")),
        (_WORKOUTS, _workout, ("workout start time", "workout end time", "cycle timezone")),
    ]
    if ctx.whoop_journal:
        families.append((_JOURNAL, _journal, ("cycle start time", "question text")))
    with Bundle(path, "WHOOP export") as bundle:
        found = False
        for pattern, convert, needed in families:
            for name in bundle.names:
                if pattern.search(name):
                    found = True
                    yield from _rows(bundle, name, needed, convert, ctx)
    if not found:
        raise InputError(
            f"{path}: no physiological_cycles.csv, sleeps.csv or workouts.csv inside; "
            "is this WHOOP's 'Export my data' ZIP?"
        )


Reader = Callable[[dict[str, str], tzinfo], list[ReadingRecord]]


def _rows(
    bundle: Bundle, name: str, needed: tuple[str, ...], convert: Reader, ctx: ReadContext
) -> Iterator[ReadingRecord | Skipped]:
    what = name.rsplit("/", 1)[-1].removesuffix(".csv").replace("_", " ")
    for line, fields in csv_rows(bundle, name, needed, "is this WHOOP's own export?"):
        try:
            yield from convert(fields, ctx.tz)
        except _MALFORMED as err:
            yield Skipped(f"whoop {what}", f"{bundle.where(name)}:{line}: {err}")


def zone(text: str, fallback: tzinfo) -> tzinfo:
    """ "UTC+01:00", "UTC-04:00", "+0530" as a fixed offset; the person's zone if empty."""
    text = text.strip()
    if not text:
        return fallback
    if text in ("UTC", "GMT", "Z"):
        return UTC
    match = _OFFSET.match(text)
    if match is None:
        raise ValueError(f"Cycle timezone {text!r}")
    sign = -1 if match.group(1) == "-" else 1
    return timezone(sign * timedelta(hours=int(match.group(2)), minutes=int(match.group(3) or 0)))


def _when(text: str, tz: tzinfo) -> datetime:
    value = datetime.fromisoformat(text)
    # Whole seconds, as the API connector stores them: the same instant, the same key.
    value = value.replace(microsecond=0)
    return value.replace(tzinfo=tz) if value.tzinfo is None else value


def _num(fields: dict[str, str], column: str) -> float | None:
    text = fields.get(column, "")
    return float(text) if text else None


def _revision(records: list[ReadingRecord], key: str) -> list[ReadingRecord]:
    for rec in records:
        rec.revision = key
    return records


def _cycle(fields: dict[str, str], person: tzinfo) -> list[ReadingRecord]:
    tz = zone(fields["cycle timezone"], person)
    start = _when(fields["cycle start time"], tz)
    out: list[ReadingRecord] = []
    end_text = fields.get("cycle end time", "")
    average = _num(fields, "average hr (bpm)")
    if end_text and average:  # the current cycle has no end yet
        end = _when(end_text, tz)
        out.append(
            ReadingRecord("heart_rate", start, end, average, "count/min", "cycle_avg", ORIGIN)
        )
    wake = fields.get("wake onset", "")
    if wake:
        # Dated at the wake-up of the cycle's sleep, as the API dates a recovery.
        when = _when(wake, tz)
        for metric, column, unit in (
            ("recovery", "recovery score %", "%"),
            ("hrv_rmssd", "heart rate variability (ms)", "ms"),
            ("resting_hr", "resting heart rate (bpm)", "count/min"),
        ):
            value = _num(fields, column)
            if value is not None:
                out.append(ReadingRecord(metric, when, when, value, unit, "", ORIGIN))
    return _revision(out, f"export-cycle:{start.isoformat()}")


def _sleep(fields: dict[str, str], person: tzinfo) -> list[ReadingRecord]:
    tz = zone(fields["cycle timezone"], person)
    if not fields["sleep onset"] or not fields["wake onset"]:
        return []  # not scored yet
    start, end = _when(fields["sleep onset"], tz), _when(fields["wake onset"], tz)
    if end <= start:
        raise ValueError(f"wakes ({fields['wake onset']}) before falling asleep")
    nap = fields.get("nap", "").lower() == "true"
    origin = NAP_ORIGIN if nap else ORIGIN

    def minutes(column: str) -> float:
        return _num(fields, column) or 0.0

    in_bed = minutes("in bed duration (min)") or (end - start).total_seconds() / 60
    out = packed_sleep(
        start,
        end,
        in_bed,
        {
            "deep": minutes("deep (sws) duration (min)"),
            "core": minutes("light sleep duration (min)"),
            "rem": minutes("rem duration (min)"),
            "awake": minutes("awake duration (min)"),
        },
        origin,
    )
    performance = _num(fields, "sleep performance %")
    if performance is not None:
        out.append(ReadingRecord("sleep_score", end, end, performance, "%", "", origin))
    breaths = _num(fields, "respiratory rate (rpm)")
    if breaths is not None:
        out.append(ReadingRecord("respiratory_rate", start, end, breaths, "count/min", "", origin))
    return _revision(out, f"export-sleep:{end.date()}:{origin}")


def _workout(fields: dict[str, str], person: tzinfo) -> list[ReadingRecord]:
    tz = zone(fields["cycle timezone"], person)
    start = _when(fields["workout start time"], tz)
    end = _when(fields["workout end time"], tz)
    if end <= start:
        return []
    # The API's sport names are lower case ("running"); the export's are capitalised.
    sport = (fields.get("activity name") or "activity").lower()
    minutes = (end - start).total_seconds() / 60
    rec = ReadingRecord("workout", start, end, minutes, "min", sport, ORIGIN)
    return _revision([rec], f"export-workout:{start.isoformat()}")


def _journal(fields: dict[str, str], person: tzinfo) -> list[ReadingRecord]:
    """A yes/no answer of the cycle's journal, only when the person turned it on."""
    tz = zone(fields.get("cycle timezone", ""), person)
    start = _when(fields["cycle start time"], tz)
    answer = fields.get("answered yes", "").lower()
    if answer not in ("true", "false"):
        return []
    value = 1.0 if answer == "true" else 0.0
    question = fields["question text"][:64]
    rec = ReadingRecord("journal", start, start, value, "yes", question, ORIGIN)
    return _revision([rec], f"export-journal:{start.isoformat()}")
