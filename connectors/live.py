"""What a live (API) connector hands back: records plus the cursors they justify.

A live connector's `pull(...)` only talks to the network; `bridge.intake.live` writes the records
and the new cursors in one transaction, so a cursor never runs ahead of its data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any, TypeVar

from bridge.errors import SourceError
from connectors.base import ReadingRecord, Record, Skipped
from connectors.http import RETRY_NEXT_SYNC

# The stages laid out from sleep start, in this order, when a source gives only totals.
STAGE_ORDER = ("deep", "core", "rem", "awake")

When = TypeVar("When", date, datetime)

# progress(stage, items so far); the CLI draws it, the daemon ignores it.
Progress = Callable[[str, int], None]

# (stream, partition) -> cursor text; None drops the cursor.
Cursors = dict[tuple[str, str], str | None]


@dataclass(frozen=True, slots=True)
class Cancellation:
    """An event the provider says is gone. recurrence_id None = every instance of uid."""

    calendar_id: str
    uid: str
    recurrence_id: str | None = None


@dataclass
class PullResult:
    # Skipped: a malformed record, counted and warned about by the writer like in imports.
    records: list[Record] = field(default_factory=list)
    cancellations: list[Cancellation] = field(default_factory=list)
    cursors: Cursors = field(default_factory=dict)
    requests: int = 0
    # Partial failures (one calendar of several): the rest is stored, then these are raised.
    errors: list[str] = field(default_factory=list)


def no_progress(stage: str, count: int) -> None:
    """The progress callback of unattended pulls."""


def parse_instant(text: str) -> datetime:
    """An ISO-8601 instant with an offset or Z; ValueError if it has none."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        raise ValueError(f"{text!r} has no UTC offset")
    return value


def parse_offset(text: str | None) -> timezone:
    """ "+hh:mm", "-hh:mm" or "Z" as a fixed zone (UTC when missing or malformed)."""
    if not text or text in ("Z", "z"):
        return UTC
    try:
        sign = -1 if text[0] == "-" else 1
        hours, minutes = text.lstrip("+-").split(":")
        return timezone(sign * timedelta(hours=int(hours), minutes=int(minutes)))
    except (ValueError, IndexError):
        return UTC


def pull_start(
    since: datetime | None,
    cursor: When | None,
    refetch_from: When,
    first_pull_from: When,
    *,
    day: bool,
) -> When:
    """Where a pull starts: at `since` when one is asked for (a backfill); else at the older
    of the cursor and the re-fetch window (sources revise their recent days); else, on the
    first pull, `first_pull_from`. `day`: the source counts in local dates."""
    if since is not None:
        return since.date() if day else since  # type: ignore[return-value]
    if cursor is not None:
        return min(cursor, refetch_from)
    return first_pull_from


def iso_z(value: datetime) -> str:
    """An aware instant as RFC 3339 UTC with milliseconds and Z."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# What converting a malformed record raises; ArithmeticError: a timestamp like 1e300
# overflows datetime arithmetic.
MALFORMED = (KeyError, TypeError, ValueError, AttributeError, ArithmeticError)


_JSON_TYPES = {"dict": "an object", "list": "a list", "str": "a string", "bool": "a boolean"}


def _shape(value: Any) -> str:
    if value is None:
        return "null"
    return "JSON " + _JSON_TYPES.get(type(value).__name__, "a number")


def page_items(page: Any, key: str, what: str) -> list[Any]:
    """The list under `key` of an API page; SourceError when the page has another shape.

    A missing or null key is an empty page; anything else that is not a list means the
    answer cannot be trusted at all, so nothing of it is stored.
    """
    if isinstance(page, str):
        # Google's client hands back the raw text of a body that is not JSON.
        raise SourceError(
            f"{what}: the answer is not JSON (truncated or empty?); {RETRY_NEXT_SYNC}"
        )
    if not isinstance(page, dict):
        raise SourceError(
            f"{what}: answered {_shape(page)} where an object was expected; {RETRY_NEXT_SYNC}"
        )
    items = page.get(key)
    if items is None:
        return []
    if not isinstance(items, list):
        raise SourceError(f"{what}: {key!r} is {_shape(items)}, not a list; {RETRY_NEXT_SYNC}")
    return items


def normalize(
    source: str, stream: str, raws: list[Any], convert: Callable[[Any], list[Any]]
) -> list[Any]:
    """Convert each raw record; a malformed one becomes a `Skipped` (counted, warned), not fatal."""
    out: list[Any] = []
    for raw in raws:
        if not isinstance(raw, dict):
            out.append(Skipped(stream, f"a {source} {stream} record is {_shape(raw)}"))
            continue
        try:
            out.extend(convert(raw))
        except MALFORMED as err:
            reason = f"malformed {source} {stream} record ({type(err).__name__}: {err})"
            out.append(Skipped(stream, reason[:300]))
    return out


def wake_time(day: dict[str, Any], start: datetime, end: datetime) -> datetime | None:
    """When a Garmin day's main sleep ended: the SLEEP event of its Body Battery event list
    (the API's daily summary and the export's UDS file carry the same list)."""
    for event in day.get("bodyBatteryActivityEventList") or []:
        if not isinstance(event, dict) or event.get("eventType") != "SLEEP":
            continue
        began, length = event.get("eventStartTimeGmt"), event.get("durationInMilliseconds")
        if not isinstance(began, str) or not began or not isinstance(length, int | float):
            continue
        woke = datetime.fromisoformat(began).replace(tzinfo=UTC) + timedelta(milliseconds=length)
        if start <= woke <= end:
            return woke
    return None


def packed_sleep(
    start: datetime, end: datetime, in_bed: float, minutes: dict[str, float], origin: str
) -> list[ReadingRecord]:
    """An in-bed span plus stage totals laid back to back from sleep start.

    WHOOP and Garmin summaries give no hypnogram; consecutive intervals keep every
    duration exact (the meters take unions of intervals) while the order is invented.
    """
    out = [ReadingRecord("sleep", start, end, in_bed, "min", "in_bed", origin)]
    cursor = start
    for label in STAGE_ORDER:
        value = minutes.get(label) or 0.0
        if value <= 0:
            continue
        # In UTC: a zone's wall-clock arithmetic would stretch a stage over a DST change.
        stop = min(end, (cursor.astimezone(UTC) + timedelta(minutes=value)).astimezone(end.tzinfo))
        out.append(ReadingRecord("sleep", cursor, stop, value, "min", label, origin))
        cursor = stop
    return out
