"""Writing check-ins: one said now (CLI, page, Home Assistant) or a history from a CSV.

A check-in's slot is the person's local slot it was said in (`mappings.slots`: morning,
afternoon, evening, night, at the configured boundaries): at most one answer per item
and slot, and a later one replaces it. Check-ins are stored apart from the readings and
never feed a meter (mappings/checkins.py).
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, tzinfo
from pathlib import Path
from typing import Any

from bridge.errors import InputError
from bridge.store import Store, upsert
from bridge.store.db import utcnow
from bridge.store.models import CheckIn
from mappings.checkins import SCALE, item, rescale
from mappings.slots import slot_of_instant

KEYS = ("local_date", "slot", "item")
UPDATE = ("at_utc", "utc_offset_min", "value", "scale_min", "scale_max", "score", "source")
CSV_COLUMNS = ("timestamp", "item", "value", "scale_min", "scale_max")


def checkin_row(
    name: str,
    value: float,
    at: datetime,
    tz: tzinfo,
    boundaries: tuple[time, ...],
    *,
    scale: tuple[float, float] = SCALE,
    source: str = "cli",
) -> dict[str, Any]:
    """The stored row of one answer; KeyError (unknown item) or ValueError (off its scale)."""
    it = item(name)
    score = rescale(float(value), *scale)
    key = slot_of_instant(at, tz, boundaries)
    offset = at.astimezone(tz).utcoffset()
    return {
        "local_date": key.local_date,
        "slot": key.slot,
        "item": it.name,
        "at_utc": at.astimezone(UTC),
        "utc_offset_min": int(offset.total_seconds() // 60) if offset else 0,
        "value": float(value),
        "scale_min": float(scale[0]),
        "scale_max": float(scale[1]),
        "score": score,
        "source": source,
    }


def parse_answers(pairs: list[str]) -> dict[str, float]:
    """`energy=4 mood=3` -> {"energy": 4.0, "mood": 3.0}; InputError names the bad pair."""
    out: dict[str, float] = {}
    lo, hi = SCALE
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep:
            raise InputError(f"{pair!r}: write item=value, e.g. energy=4")
        try:
            it = item(name)
        except KeyError as err:
            raise InputError(str(err.args[0])) from None
        try:
            value = float(raw)
        except ValueError:
            raise InputError(f"{pair!r}: the value must be a number {lo}-{hi}") from None
        if not lo <= value <= hi:
            raise InputError(f"{pair!r}: the value must be {lo}-{hi}")
        out[it.name] = value
    if not out:
        raise InputError("give at least one item=value, e.g. energy=4 stress=2")
    return out


def record_checkins(
    store: Store,
    answers: dict[str, float],
    at: datetime,
    tz: tzinfo,
    boundaries: tuple[time, ...],
    *,
    source: str = "cli",
) -> list[dict[str, Any]]:
    """Store answers given at `at` (one transaction); a second one in a slot replaces."""
    rows = [checkin_row(k, v, at, tz, boundaries, source=source) for k, v in answers.items()]
    now = utcnow()
    with store.transaction() as session:
        upsert(
            session,
            CheckIn,
            [{**row, "recorded_at": now} for row in rows],
            keys=KEYS,
            update=UPDATE,
            touch=("recorded_at",),
        )
    return rows


@dataclass
class CheckinImport:
    path: str
    rows: int = 0
    new: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    def line(self) -> str:
        why = ", ".join(f"{k} {v}" for k, v in sorted(self.skipped.items()))
        skipped = f", {sum(self.skipped.values())} skipped ({why})" if self.skipped else ""
        return f"{self.path}: {self.rows} check-ins read, {self.new} new or changed{skipped}"


def _instant(text: str, tz: tzinfo) -> datetime:
    at = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    # A timestamp without an offset is the person's own wall time.
    return at if at.tzinfo else at.replace(tzinfo=tz)


def import_checkins(
    store: Store, path: Path, tz: tzinfo, boundaries: tuple[time, ...]
) -> CheckinImport:
    """A check-in history from a CSV (timestamp, item, value, scale_min, scale_max).

    Streamed row by row and written in one transaction; a bad row (unknown item, unreadable
    timestamp or number, a value off its scale) is counted and skipped. Within the file the
    latest answer per item and slot wins, as it would have when said; importing the same
    file again changes nothing.
    """
    summary = CheckinImport(str(path))
    latest: dict[tuple[Any, ...], dict[str, Any]] = {}
    try:
        handle = path.expanduser().open(newline="", encoding="utf-8-sig")
    except OSError as err:
        raise InputError(f"{path}: cannot read the check-in file ({err.strerror})") from None
    with handle:
        reader = csv.DictReader(handle)
        header = [h.strip().lower() for h in reader.fieldnames or []]
        missing = [c for c in CSV_COLUMNS if c not in header]
        if missing:
            raise InputError(
                f"{path}: no column {', '.join(missing)}; the header must be "
                f"{','.join(CSV_COLUMNS)}"
            )
        reader.fieldnames = header
        for raw in reader:
            summary.rows += 1
            try:
                at = _instant(raw["timestamp"] or "", tz)
            except (ValueError, TypeError):
                summary.skipped["bad timestamp"] += 1
                continue
            try:
                scale = (float(raw["scale_min"] or ""), float(raw["scale_max"] or ""))
                value = float(raw["value"] or "")
            except (ValueError, TypeError):
                summary.skipped["bad number"] += 1
                continue
            try:
                row = checkin_row(
                    raw["item"] or "", value, at, tz, boundaries, scale=scale, source="csv"
                )
            except KeyError:
                summary.skipped["unknown item"] += 1
                continue
            except ValueError:
                summary.skipped["off its scale"] += 1
                continue
            key = tuple(row[k] for k in KEYS)
            if key not in latest or latest[key]["at_utc"] <= row["at_utc"]:
                latest[key] = row
    now = utcnow()
    with store.transaction() as session:
        summary.new = upsert(
            session,
            CheckIn,
            [{**row, "recorded_at": now} for row in latest.values()],
            keys=KEYS,
            update=UPDATE,
            touch=("recorded_at",),
        )
    return summary
