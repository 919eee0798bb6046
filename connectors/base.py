"""What every connector yields: normalized records, independent of the vendor.

A *file source* is a module with the same shape as its siblings:

    KIND: str                  # the CLI name, e.g. "apple-health"
    SOURCE: str                # the stored source name, e.g. "apple_health"
    def read(path, ctx) -> Iterator[ReadingRecord | EventRecord | ReplaceScope]

What it provides (metric keys, or "calendar"/"tasks"), how it is scheduled, watched and
authorized is declared once, in its spec in `connectors.registry`.

`read` never touches the database; `bridge.intake.ingest` writes what it yields in one
transaction, so a failed import commits nothing.

Records a source revises
------------------------
Some facts arrive before they are final and come back later, changed: a day's total
grows with every watch upload (its end moves with it), a night is re-scored (new stage
totals, so the stages laid back to back from sleep start get new ends), a person edits
their sleep window (a new start), an API object is updated. A row's natural key holds its
instants, so each version would be a new row beside the old one. Such records carry a
`revision` key naming the fact, not the version; every record of one revision key is the
whole current truth of that fact, and the writer replaces the stored rows of the same
source and key with them in the same transaction (it never adds beside them). What names
the fact, per source:

    garmin          "day:<local date>"     the daily summary (steps, average stress,
                                           resting HR, Body Battery): a day still growing
                    "sleep:<calendarDate>" a night's in-bed span, stages, score, breathing
                    (heart rate samples and nightly HRV have stable instants: no key)
    whoop           "sleep:<id>", "cycle:<id>", "workout:<id>"  the API object's id;
                    "recovery:<cycle_id>"  a recovery is its cycle's (dated at wake-up,
                                           which moves when the sleep is edited)
    google_calendar events: the natural key is already the API's id (uid, recurrence)
    ics             events: UID + RECURRENCE-ID (the natural key)
    apple_health    export samples are final: no key
    apple_push      a summarised night, "sleep:<local wake date>:<origin>" (re-sent with
                    other stage totals as the watch syncs more); metric buckets are
                    stored as [date, date + bucket), so a bucket re-sent larger already
                    has the same natural key. A day total whose end moved would use
                    "day:<metric>:<local date>"
    garmin_export   "sleep:<calendarDate>" a night's in-bed span and packed stages (a
                                           newer export may re-score it); the rest: no key
    fitbit          "sleep:<dateOfSleep>", "score:<dateOfSleep>" a night and its score
    whoop (export)  "export-sleep:<wake date>:<origin>", "export-cycle:<start>",
                    "export-workout:<start>" (the export has no ids)
    fit             files of final samples: no key

A source must yield every record of a revision key in the same pull or file (the writer
deletes what the key's new version no longer has).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any


@dataclass(frozen=True, slots=True)
class ReadContext:
    """What a reader may need to know about the person: their zone and "now"."""

    tz: tzinfo
    now: datetime
    past_days: int = 35
    future_days: int = 14
    # Recurrence caps of calendar files and feeds (sources.ics in the config).
    max_instances_per_event: int = 10_000
    max_instances_per_file: int = 20_000
    # Set when the daemon is stopping: writers roll their transaction back at the next
    # batch (bridge.errors.Cancelled), so a stop is bounded and leaves nothing partial.
    stop: threading.Event | None = None
    # A writer's shortcut, for readers that offer one (apple_health): raw attributes of a
    # record go to it first, and what it returns instead of None (a ready row) is yielded
    # in place of the record. In the context so that every reader keeps read(path, ctx).
    fast_rows: Callable[[dict[str, str]], Any] | None = None
    # WHOOP's journal answers are intimate: read only when the person turned it on
    # (`[sources.whoop] import_journal`).
    whoop_journal: bool = False


@dataclass(slots=True)
class ReadingRecord:
    """One measurement or interval (aware datetimes; value None for pure intervals)."""

    metric: str
    start: datetime
    end: datetime
    value: float | None
    unit: str = ""
    label: str = ""
    origin: str = ""
    device: str = ""
    # Which fact this is a version of, when the source may revise it (see above).
    revision: str = ""

    def row(self, source: str, imported_at: datetime) -> dict[str, Any]:
        offset = self.start.utcoffset()
        return {
            "source": source,
            "metric": self.metric,
            "origin": self.origin,
            "start_utc": self.start.astimezone(UTC),
            "end_utc": self.end.astimezone(UTC),
            "utc_offset_min": int(offset.total_seconds() // 60) if offset is not None else 0,
            "value": self.value,
            "unit": self.unit,
            "label": self.label,
            "device": self.device,
            "revision": self.revision,
            "imported_at": imported_at,
        }


@dataclass(slots=True)
class EventRecord:
    """One calendar event instance."""

    calendar_id: str
    uid: str
    title: str
    start: datetime
    end: datetime
    recurrence_id: str = ""
    all_day: bool = False
    status: str = "confirmed"
    transparency: str = "opaque"
    event_type: str = "default"
    attendee_count: int = 0
    self_response: str = ""
    location: str = ""
    organized_by_me: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def row(self, source: str, updated_at: datetime) -> dict[str, Any]:
        offset = self.start.utcoffset()
        row = {
            "source": source,
            "calendar_id": self.calendar_id,
            "uid": self.uid,
            "recurrence_id": self.recurrence_id,
            "title": self.title,
            "start_utc": self.start.astimezone(UTC),
            "end_utc": self.end.astimezone(UTC),
            "utc_offset_min": int(offset.total_seconds() // 60) if offset is not None else 0,
            "all_day": self.all_day,
            "status": self.status,
            "transparency": self.transparency,
            "event_type": self.event_type,
            "attendee_count": self.attendee_count,
            "self_response": self.self_response,
            "location": self.location,
            "organized_by_me": self.organized_by_me,
            "updated_at": updated_at,
        }
        row["content_hash"] = event_hash(row)
        return row


# The fields whose change means the event must be classified again.
HASHED_FIELDS = (
    "title",
    "start_utc",
    "end_utc",
    "all_day",
    "status",
    "transparency",
    "event_type",
    "attendee_count",
    "self_response",
)
# Read by the classifier too, but hashed only when set: a store written before they
# existed keeps its hashes, so its events are not all labelled again for nothing.
OPTIONAL_HASHED_FIELDS = ("location", "organized_by_me")


def event_hash(row: dict[str, Any]) -> str:
    parts = [str(row[k]) for k in HASHED_FIELDS]
    parts += [f"{k}={row[k]}" for k in OPTIONAL_HASHED_FIELDS if row.get(k)]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class ReplaceScope:
    """The reader's data is the whole truth for this calendar in [start, end).

    Stored events of that calendar in the window that the reader did not yield are marked
    cancelled (an .ics file or feed has no deletion records; absence is deletion). `keep`
    names events the source did list but that could not be read (skipped): they are not
    gone. Each is (uid, recurrence_id), recurrence_id None meaning every instance of uid.
    """

    calendar_id: str
    start: datetime
    end: datetime
    keep: frozenset[tuple[str, str | None]] = frozenset()


@dataclass(frozen=True, slots=True)
class Skipped:
    """A record the reader could not read (a value that is not a number, a missing date).

    One bad record must not cost the person the rest of the file: the reader yields this
    instead of raising, and the import counts it and warns once per kind.
    """

    kind: str
    reason: str


@dataclass(slots=True)
class TaskRecord:
    """One to-do as its source has it now (aware datetimes).

    `due` is the deadline instant; a date-only due (Google Tasks always, VTODO `DUE;VALUE=
    DATE`) is the end of that day in the person's zone, with `due_all_day` set. `completed`
    None with status "done" means "done, time unknown" (the bridge then uses when it saw it).
    """

    list_id: str
    uid: str
    title: str
    status: str = "open"  # open|done|cancelled
    due: datetime | None = None
    due_all_day: bool = False
    created: datetime | None = None
    completed: datetime | None = None
    deleted: bool = False
    priority: int = 0
    percent: int | None = None
    parent: str = ""

    def row(self, source: str, updated_at: datetime) -> dict[str, Any]:
        def utc(value: datetime | None) -> datetime | None:
            return value.astimezone(UTC) if value is not None else None

        row = {
            "source": source,
            "list_id": self.list_id,
            "uid": self.uid,
            "title": self.title,
            "status": self.status,
            "due_utc": utc(self.due),
            "due_all_day": self.due_all_day,
            "created_utc": utc(self.created),
            "completed_utc": utc(self.completed),
            "deleted": self.deleted,
            "priority": self.priority,
            "percent": self.percent,
            "parent": self.parent,
            "updated_at": updated_at,
        }
        text = "\x1f".join(str(row[k]) for k in TASK_HASHED_FIELDS)
        row["content_hash"] = hashlib.sha256(text.encode()).hexdigest()[:32]
        return row


TASK_HASHED_FIELDS = (
    "title",
    "status",
    "due_utc",
    "due_all_day",
    "created_utc",
    "completed_utc",
    "deleted",
    "priority",
    "percent",
    "parent",
)


@dataclass(frozen=True, slots=True)
class TaskScope:
    """The reader's tasks are every task of this list (an .ics file, a full list pull):
    stored tasks of the list it did not yield are deleted, except `keep` (listed but
    unreadable, so not gone)."""

    list_id: str
    keep: frozenset[str] = frozenset()


Record = ReadingRecord | EventRecord | ReplaceScope | Skipped | TaskRecord | TaskScope
