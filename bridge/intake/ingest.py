"""Importing a file: stream a reader's records into the store in one transaction.

The file's content hash is recorded in the same transaction, so a watched folder imports
each version once, a killed import leaves nothing behind, and re-running it is the fix.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from operator import itemgetter
from pathlib import Path
from typing import Any

from sqlalchemy import and_, delete, not_, select, tuple_, update
from sqlalchemy.engine import Connection
from sqlmodel import Session, col

from bridge.errors import Cancelled, InputError
from bridge.intake.parse_apart import apple_records
from bridge.intake.tasks import delete_missing, write_tasks
from bridge.store import Store, upsert
from bridge.store.db import person_of, utcnow
from bridge.store.models import CalendarEvent, ImportedFile, Reading, SyncState
from connectors import file_source
from connectors.base import (
    HASHED_FIELDS,
    OPTIONAL_HASHED_FIELDS,
    EventRecord,
    ReadContext,
    ReadingRecord,
    Record,
    ReplaceScope,
    Skipped,
    TaskRecord,
    TaskScope,
)
from connectors.bundle import folder_sha256
from connectors.validate import (
    EARLIEST,
    FUTURE_SLACK,
    MAX_READING_SPAN,
    RANGES,
    check_event,
    check_reading,
    check_task,
)

_INFINITE = (float("inf"), float("-inf"))
# (stamp, wall_clock) -> records and ready rows; see write_records.
FastRecords = Callable[[str, datetime], Iterable[Any]]

log = logging.getLogger("rhythm_bridge.ingest")

BATCH = 5000
READING_KEY = ("source", "metric", "origin", "start_utc", "end_utc", "label")
READING_UPDATE = ("value", "unit", "device", "utc_offset_min", "revision")
READING_COLUMNS = (
    "source",
    "metric",
    "origin",
    "start_utc",
    "end_utc",
    "utc_offset_min",
    "value",
    "unit",
    "label",
    "device",
    "revision",
    "imported_at",
)
EVENT_KEY = ("source", "calendar_id", "uid", "recurrence_id")
# What an event's re-import may change: the fields its content hash covers, plus these.
EVENT_UPDATE = (*HASHED_FIELDS, *OPTIONAL_HASHED_FIELDS, "utc_offset_min", "content_hash")


@dataclass
class ImportSummary:
    """What one import did, for the one-line report."""

    kind: str
    path: str
    records: int = 0
    new: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    cancelled: int = 0
    replaced: int = 0  # earlier versions of revised records, deleted
    skipped: Counter[str] = field(default_factory=Counter)
    skipped_same_file: bool = False
    not_modified: bool = False
    seconds: float = 0.0

    @property
    def known(self) -> int:
        return self.records - self.new

    def line(self) -> str:
        if self.skipped_same_file:
            return f"{self.path}: already imported (same content), nothing to do"
        if self.not_modified:
            return f"{self.path}: not modified since the last fetch, nothing to do"
        types = ", ".join(f"{k} {v}" for k, v in sorted(self.by_type.items()))
        extra = f", {self.cancelled} cancelled" if self.cancelled else ""
        if self.replaced:
            extra += f", {self.replaced} earlier versions replaced"
        if self.skipped:
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.skipped.items()))
            extra += (
                f", {sum(self.skipped.values())} skipped as unreadable or implausible ({kinds})"
            )
        return (
            f"{self.path}: {self.records} records ({types}); {self.new} new, "
            f"{self.known} already known{extra}; {self.seconds:.1f}s"
        )


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror or err}") from None
    return digest.hexdigest()


def already_imported(session: Session, kind: str, sha: str) -> bool:
    stmt = select(col(ImportedFile.id)).where(
        col(ImportedFile.kind) == kind, col(ImportedFile.sha256) == sha
    )
    return session.execute(stmt).first() is not None


def _sqlite_datetime(value: datetime) -> str:
    """What SQLAlchemy stores for an aware datetime on SQLite, about 4x faster."""
    utc = value.astimezone(UTC)
    text = utc.isoformat(" ")  # "2026-11-01 07:00:00[.ffffff]+00:00"
    return text[:26] if utc.microsecond else text[:19] + ".000000"


def _same_as(reference: Callable[[Any], Any] | None, fast: Callable[[Any], Any]) -> bool:
    """Whether the fast formatter writes exactly what SQLAlchemy's processor writes."""
    samples = (
        datetime(2026, 11, 1, 7, 0, tzinfo=UTC),
        datetime(1999, 1, 2, 23, 59, 58, 123456, tzinfo=timezone(timedelta(hours=-7))),
    )
    return reference is not None and all(reference(v) == fast(v) for v in samples)


class ReadingWriter:
    """Upserts readings in batches; on SQLite straight through the DBAPI's executemany.

    An export holds millions of readings, and SQLAlchemy's per-row work (a dict per row,
    bind processing, a multi-VALUES statement) costs more than parsing them. On SQLite the
    same `INSERT ... ON CONFLICT DO UPDATE ... WHERE changed` that `upsert` emits runs as
    one prepared statement over plain tuples, with datetimes converted by the column
    type's own bind processor, so stored values are exactly those `upsert` writes.
    Other databases use `upsert`. Both count rows inserted or really changed.
    """

    def __init__(self, session: Session, source: str, now: datetime) -> None:
        self.session = session
        self.source = source
        self.now = now
        self.rows: list[Any] = []
        self.last: list[Any] = [None, None]  # the last end datetime and its stored form
        self.latest: datetime | None = None  # the wall clock the bounds below are for
        self.bounds_db: tuple[str, str] = ("", "")
        self.revised = Revisions()
        conn: Connection = session.connection()
        self.conn = conn
        self.fast = conn.dialect.name == "sqlite"
        if self.fast:
            table = Reading.__table__  # type: ignore[attr-defined]
            to_db = table.c.start_utc.type._cached_bind_processor(conn.dialect)
            self.to_db = _sqlite_datetime if _same_as(to_db, _sqlite_datetime) else to_db
            self.stamp = self.to_db(now)
            # Rows are queued without their person (the same for the whole write): it is
            # bound first when they are written.
            self.person = person_of(session)
            cols = ", ".join(("person", *READING_COLUMNS))
            marks = ", ".join("?" for _ in range(len(READING_COLUMNS) + 1))
            changed = " OR ".join(f"readings.{c} IS NOT excluded.{c}" for c in READING_UPDATE)
            # Every row fires the meter_changes trigger, so SQLite keeps a statement
            # journal for each; in a temp file that cost 3 s of system time on a 200 MB
            # export. In memory it is a page or two per row, for this write only.
            raw: Any = conn.connection.dbapi_connection  # sqlite3's own connection
            self.temp_store = raw.execute("PRAGMA temp_store").fetchone()[0]
            raw.execute("PRAGMA temp_store = MEMORY")
            self.sql = (
                f"INSERT INTO readings ({cols}) VALUES ({marks}) "
                f"ON CONFLICT (person, {', '.join(READING_KEY)}) DO UPDATE SET "
                + ", ".join(f"{c} = excluded.{c}" for c in READING_UPDATE)
                + f" WHERE {changed}"
            )

    def add(self, rec: ReadingRecord, wall_clock: datetime) -> str | None:
        """Queue a reading; or return why it is implausible (and queue nothing)."""
        if not self.fast:
            reason = check_reading(rec, wall_clock)
            if reason is None:
                self.rows.append(rec.row(self.source, self.now))
                if rec.revision:
                    self.revised.add(rec)
            return reason
        # The cheap half of check_reading, on values this path computes anyway (it runs
        # per record of multi-GB exports); anything suspicious gets the exact check.
        value, bounds = rec.value, RANGES.get(rec.metric)
        out_of_range = value is not None and (
            value != value or (bounds is not None and not bounds[0] <= value <= bounds[1])
        )
        origin, device = rec.origin, rec.device
        if (
            out_of_range
            or len(origin) > 200
            or len(device) > 300
            or not origin.isprintable()
            or not device.isprintable()
            or not rec.label.isprintable()
            or not rec.unit.isprintable()
        ):
            reason = check_reading(rec, wall_clock)
            if reason is not None:
                return reason
        start, end = rec.start, rec.end
        offset = start.utcoffset()
        # Readers reuse datetime objects (an instant's end is its start; a segment starts
        # at the last one's end), so the conversion is reused by identity.
        last = self.last
        start_db = last[1] if start is last[0] else self.to_db(start)
        end_db = start_db if end is start else self.to_db(end)
        last[0], last[1] = end, end_db
        # Stored instants are UTC text, so these comparisons are exact and cheap.
        if self.latest is not wall_clock:
            self.latest, self.bounds_db = (
                wall_clock,
                (
                    self.to_db(EARLIEST),
                    self.to_db(wall_clock + FUTURE_SLACK),
                ),
            )
        lo_db, hi_db = self.bounds_db
        if (
            start_db < lo_db
            or start_db > hi_db
            or end_db < start_db
            or (end_db[:10] != start_db[:10] and end - start > MAX_READING_SPAN)
            or value in _INFINITE
            or len(rec.unit) > 32
            or len(rec.label) > 64
            or len(rec.metric) > 48
        ):
            reason = check_reading(rec, wall_clock)
            if reason is not None:
                return reason
        self.rows.append(
            (
                self.source,
                rec.metric,
                rec.origin,
                start_db,
                end_db,
                int(offset.total_seconds() // 60) if offset is not None else 0,
                rec.value,
                rec.unit,
                rec.label,
                rec.device,
                rec.revision,
                self.stamp,
            )
        )
        if rec.revision:
            self.revised.add(rec)
        return None

    def close(self) -> None:
        """Put back the connection's temp store (it returns to the pool)."""
        if self.fast:
            raw: Any = self.conn.connection.dbapi_connection
            with contextlib.suppress(sqlite3.Error):  # never mask why a write failed
                raw.execute(f"PRAGMA temp_store = {int(self.temp_store)}")

    def flush(self) -> int:
        """Write the pending rows; return how many were new or changed."""
        if not self.rows:
            return 0
        try:
            rows = _last_per_key(self.rows, _ROW_KEY if self.fast else _DICT_KEY)
            if not self.fast:
                return upsert(self.session, Reading, rows, keys=READING_KEY, update=READING_UPDATE)
            cursor = self.conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
            try:
                person = self.person
                cursor.executemany(self.sql, [(person, *row) for row in rows])
                return max(0, cursor.rowcount)
            finally:
                cursor.close()
        finally:
            self.rows.clear()


# A reading's natural key within one writer (the source is the writer's own): in the
# fast path's tuples (metric, origin, start, end, label) and in upsert's dicts.
_ROW_KEY = itemgetter(1, 2, 3, 4, 8)
_DICT_KEY = itemgetter(*(k for k in READING_KEY if k != "source"))


def _last_per_key(rows: list[Any], key: Callable[[Any], Any]) -> list[Any]:
    """One row per natural key, the last written winning.

    Real exports repeat a sample under the same key with another value or device (one
    re-synced after a watchOS update). Written in turn, each repeat would overwrite the
    one before, so a forced re-import would "change" them all again (and PostgreSQL
    refuses a statement that updates one row twice). Repeats further apart than a batch
    still each win in turn.
    """
    latest = {key(row): row for row in rows}
    return rows if len(latest) == len(rows) else list(latest.values())


class Revisions:
    """The current version of every revised fact in one write, to replace earlier ones.

    A source names a fact it may revise (`ReadingRecord.revision`, connectors/base.py);
    what this write holds of a fact is all of it. After the new rows are upserted, the
    stored rows of the same source and revision key that this version does not have are
    earlier versions and are deleted, in the same transaction: a day that grew, a night
    re-scored or moved keeps exactly its latest rows.

    Rows stored before revision keys existed have none ("" in the column). Those matching
    a new row exactly get the key with the upsert; the others of the same metric and
    origin within the fact's time span are earlier versions of it and go too.
    """

    def __init__(self) -> None:
        # revision -> natural keys (metric, origin, label, start, end) of this version
        self.keys: dict[str, set[tuple[str, str, str, datetime, datetime]]] = {}
        # revision -> (metric, origin) pairs and the span [lo, hi] they cover
        self.spans: dict[str, tuple[set[tuple[str, str]], datetime, datetime]] = {}

    def __bool__(self) -> bool:
        return bool(self.keys)

    def add(self, rec: ReadingRecord) -> None:
        start, end = rec.start.astimezone(UTC), rec.end.astimezone(UTC)
        self.keys.setdefault(rec.revision, set()).add(
            (rec.metric, rec.origin, rec.label, start, end)
        )
        pairs, lo, hi = self.spans.get(rec.revision, (set(), start, end))
        pairs.add((rec.metric, rec.origin))
        self.spans[rec.revision] = (pairs, min(lo, start), max(hi, end))

    def replace(self, session: Session, source: str) -> int:
        """Delete the earlier versions of this write's facts; how many rows went."""
        if not self.keys:
            return 0
        table = Reading.__table__  # type: ignore[attr-defined]
        conn = session.connection()
        mine = table.c.person == person_of(session)
        cols = (table.c.id, table.c.metric, table.c.origin, table.c.label)
        instants = (table.c.start_utc, table.c.end_utc)
        doomed: list[int] = []
        names = sorted(self.keys)
        for i in range(0, len(names), 500):
            chunk = names[i : i + 500]
            rows = conn.execute(
                select(*cols, *instants, table.c.revision).where(
                    mine,
                    table.c.source == source,
                    table.c.revision != "",  # lets the planner use the partial index
                    table.c.revision.in_(chunk),
                )
            )
            for rid, metric, origin, label, start, end, revision in rows:
                if (metric, origin, label, _utc(start), _utc(end)) not in self.keys[revision]:
                    doomed.append(rid)
        # Rows from before revision keys: earlier versions if inside a fact's span.
        metrics = sorted({m for pairs, _, _ in self.spans.values() for m, _ in pairs})
        lo = min(span[1] for span in self.spans.values())
        hi = max(span[2] for span in self.spans.values())
        legacy = conn.execute(
            select(table.c.id, table.c.metric, table.c.origin, *instants).where(
                mine,
                table.c.source == source,
                table.c.revision == "",
                table.c.metric.in_(metrics),
                # No reading is longer than MAX_READING_SPAN: a bounded range on the index.
                table.c.start_utc >= lo - MAX_READING_SPAN,
                table.c.start_utc <= hi,
                table.c.end_utc >= lo,
            )
        ).all()
        if legacy:
            for rid, metric, origin, start, end in legacy:
                start, end = _utc(start), _utc(end)
                for pairs, a, b in self.spans.values():
                    if (metric, origin) in pairs and _within(start, end, a, b):
                        doomed.append(rid)
                        break
        for i in range(0, len(doomed), 500):
            conn.execute(delete(table).where(mine, table.c.id.in_(doomed[i : i + 500])))
        return len(doomed)


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _within(start: datetime, end: datetime, lo: datetime, hi: datetime) -> bool:
    """Whether a stored row lies in a fact's span (an interval overlapping it, not only
    touching it: yesterday's total ends where today's begins)."""
    if start == end:
        return lo <= start <= hi
    return start < hi and end > lo if lo < hi else start <= lo <= end


def write_records(
    session: Session,
    source: str,
    records: Iterable[Record],
    summary: ImportSummary,
    *,
    now: datetime,
    progress: Callable[[int], None] | None = None,
    stop: threading.Event | None = None,
    fast_records: FastRecords | None = None,
) -> None:
    """Upsert a stream of records in batches inside the caller's transaction.

    With `stop` set (the daemon is stopping), the next batch raises Cancelled instead of
    writing: the caller's transaction rolls back and the stop waits for one batch at most.

    `fast_records(stamp, wall_clock)`, where the SQLite fast path runs, replaces `records`
    with a stream that may also hold ready rows (tuples in READING_COLUMNS order, with
    `stamp` as imported_at, already checked against `wall_clock`).
    """
    readings = ReadingWriter(session, source, now)
    # Plausibility is judged against the real clock: a pull's `now` may be a logical time
    # (a backfill, a test), but no measurement can come from after this moment.
    wall_clock = utcnow()
    try:
        if fast_records is not None and readings.fast and readings.to_db is _sqlite_datetime:
            records = fast_records(readings.stamp, wall_clock)
        batches = _Batches(session, source, summary, readings, now, progress=progress, stop=stop)
        _write(batches, records, wall_clock)
    finally:
        readings.close()
        # A reader running in a child process ends it now, not when the traceback goes.
        close = getattr(records, "close", None)
        if close is not None:
            close()


@dataclass
class _Batches:
    """One import's rows not yet written, what it has seen so far, and where they go."""

    session: Session
    source: str
    summary: ImportSummary
    readings: ReadingWriter
    now: datetime
    progress: Callable[[int], None] | None = None
    stop: threading.Event | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    scopes: list[ReplaceScope] = field(default_factory=list)
    task_scopes: list[TaskScope] = field(default_factory=list)
    seen_events: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    seen_tasks: dict[str, set[str]] = field(default_factory=dict)
    by_type: dict[str, int] = field(default_factory=dict)

    def flush(self) -> None:
        summary = self.summary
        summary.new += self.readings.flush()
        if self.tasks:
            summary.new += write_tasks(self.session, self.source, self.tasks, self.now)
            self.tasks.clear()
        if self.events:
            summary.new += upsert(
                self.session,
                CalendarEvent,
                self.events,
                keys=EVENT_KEY,
                update=EVENT_UPDATE,
                touch=("updated_at",),
            )
            self.events.clear()
        if self.progress:
            self.progress(summary.records)
        if self.stop is not None and self.stop.is_set():
            raise Cancelled()

    def note_skip(self, kind: str, reason: str, what: str = "implausible") -> None:
        summary = self.summary
        if not summary.skipped[kind]:  # one warning per kind, not one per record
            log.warning("%s: skipping %s %s record: %s", summary.path, what, kind, reason)
        summary.skipped[kind] += 1

    def add_other(self, rec: Record, wall_clock: datetime) -> bool:
        """Take a record that is not a reading; True: a batch is full."""
        if type(rec) is Skipped:
            self.note_skip(rec.kind, rec.reason, "unreadable")
            return False
        if isinstance(rec, EventRecord):
            return self._add_event(rec, wall_clock)
        if type(rec) is TaskRecord:
            return self._add_task(rec, wall_clock)
        if type(rec) is TaskScope:
            self.task_scopes.append(rec)
        else:
            self.scopes.append(rec)  # type: ignore[arg-type]
        return False

    def _add_event(self, rec: EventRecord, wall_clock: datetime) -> bool:
        try:
            reason = check_event(rec, wall_clock)
        except OverflowError:
            reason = "date out of range"
        if reason is not None:
            self.note_skip("event", reason)
            return False
        self.events.append(rec.row(self.source, self.now))
        self.seen_events.setdefault(rec.calendar_id, set()).add((rec.uid, rec.recurrence_id))
        self.by_type["event"] = self.by_type.get("event", 0) + 1
        return len(self.readings.rows) + len(self.events) >= BATCH

    def _add_task(self, rec: TaskRecord, wall_clock: datetime) -> bool:
        row = None
        try:
            reason = check_task(rec, wall_clock)
            row = rec.row(self.source, self.now) if reason is None else None
        except OverflowError:
            reason = "date out of range"
        if row is None or reason is not None:
            self.note_skip("task", reason or "date out of range")
            return False
        self.tasks.append(row)
        self.seen_tasks.setdefault(rec.list_id, set()).add(rec.uid)
        self.by_type["task"] = self.by_type.get("task", 0) + 1
        return len(self.readings.rows) + len(self.events) + len(self.tasks) >= BATCH

    def finish(self) -> None:
        """After the last batch: revised readings replaced, what the source dropped gone."""
        session, source, summary, now = self.session, self.source, self.summary, self.now
        summary.replaced += self.readings.revised.replace(session, source)
        for scope in self.scopes:
            seen = self.seen_events.get(scope.calendar_id, set())
            summary.cancelled += cancel_missing(session, source, scope, seen, now)
        for task_scope in self.task_scopes:
            seen_tasks = self.seen_tasks.get(task_scope.list_id, set())
            summary.cancelled += delete_missing(session, source, task_scope, seen_tasks, now)


def _write(batches: _Batches, records: Iterable[Record], wall_clock: datetime) -> None:
    # Readings are nearly every record of a large export: they stay inline here, with
    # the writer's list and method held in locals.
    summary, by_type = batches.summary, batches.by_type
    pending = batches.readings.rows
    add = batches.readings.add
    for rec in records:
        if type(rec) is tuple:  # a ready row (fast_records)
            pending.append(rec)
            metric = rec[1]
            by_type[metric] = by_type.get(metric, 0) + 1
            if len(pending) < BATCH:
                continue
        elif type(rec) is ReadingRecord:
            try:
                reason = add(rec, wall_clock)
            except OverflowError:
                # Year 1 at +01:00 or year 9999 at -05:00 has no UTC instant.
                reason = "date out of range"
            if reason is not None:
                batches.note_skip(rec.metric, reason)
                continue
            metric = rec.metric
            by_type[metric] = by_type.get(metric, 0) + 1
            if len(pending) < BATCH:
                continue
        elif not batches.add_other(rec, wall_clock):
            continue
        summary.records = sum(by_type.values())
        batches.flush()
    summary.records = sum(by_type.values())
    summary.by_type.update(by_type)
    batches.flush()
    batches.finish()


def cancel_missing(
    session: Session,
    source: str,
    scope: ReplaceScope,
    seen: set[tuple[str, str]],
    now: datetime,
) -> int:
    """Mark events of the scope's calendar and window that the source no longer has."""
    table = CalendarEvent.__table__  # type: ignore[attr-defined]
    cond = and_(
        table.c.person == person_of(session),
        table.c.source == source,
        table.c.calendar_id == scope.calendar_id,
        table.c.start_utc >= scope.start,
        table.c.start_utc < scope.end,
        table.c.status != "cancelled",
    )
    seen = seen | {(uid, rid) for uid, rid in scope.keep if rid is not None}
    if seen:
        cond = and_(cond, not_(tuple_(table.c.uid, table.c.recurrence_id).in_(list(seen))))
    every_instance = [uid for uid, rid in scope.keep if rid is None]
    if every_instance:
        cond = and_(cond, table.c.uid.not_in(every_instance))
    result = session.connection().execute(
        update(table)
        .where(cond)
        .values(status="cancelled", updated_at=now, content_hash="cancelled")
    )
    return max(0, result.rowcount or 0)


def import_changed_file(store: Store, kind: str, path: Path, ctx: ReadContext) -> ImportSummary:
    """Import a watched file unless it is unchanged (same size, not modified since) since
    this path was last imported; only then is it worth hashing a multi-GB export again."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror or err}") from None
    modified = datetime.fromtimestamp(stat.st_mtime, UTC)
    with store.session() as session:
        seen = session.execute(
            select(col(ImportedFile.id)).where(
                col(ImportedFile.kind) == kind,
                col(ImportedFile.path) == str(path),
                col(ImportedFile.size) == stat.st_size,
                col(ImportedFile.imported_at) >= modified,
            )
        ).first()
    if seen is not None:
        return ImportSummary(kind=kind, path=str(path), skipped_same_file=True)
    return import_file(store, kind, path, ctx)


def import_file(
    store: Store,
    kind: str,
    path: Path,
    ctx: ReadContext,
    *,
    force: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ImportSummary:
    """Import one file of the given kind; all or nothing."""
    try:
        module = file_source(kind)
    except ValueError as err:
        raise InputError(str(err)) from None
    path = Path(path)
    started = time.perf_counter()
    if path.is_dir() and getattr(module, "FOLDERS", False):
        # An unzipped export: its hash is over the members the reader reads.
        sha, size = folder_sha256(path, module.wanted)
    elif path.is_file():
        sha, size = file_sha256(path), path.stat().st_size
    else:
        raise InputError(f"{path}: no such file")
    summary = ImportSummary(kind=kind, path=str(path))
    now = utcnow()
    with store.transaction() as session:
        if not force and already_imported(session, kind, sha):
            summary.skipped_same_file = True
            return summary
        fast_records: FastRecords | None = None
        if kind == "apple-health":

            def fast_records(stamp: str, wall_clock: datetime) -> Iterable[Any]:
                return apple_records(path, ctx, module.SOURCE, stamp, wall_clock)

        write_records(
            session,
            module.SOURCE,
            module.read(path, ctx),
            summary,
            now=now,
            progress=progress,
            stop=ctx.stop,
            fast_records=fast_records,
        )
        upsert(
            session,
            ImportedFile,
            [
                {
                    "kind": kind,
                    "sha256": sha,
                    "path": str(path),
                    "size": size,
                    "records": summary.records,
                    "new_records": summary.new,
                    "imported_at": now,
                }
            ],
            keys=("kind", "sha256"),
            update=("path", "records", "new_records", "imported_at"),
        )
    summary.seconds = time.perf_counter() - started
    return summary


FEED_STREAM = "feed"


def import_feed(
    store: Store,
    url: str,
    ctx: ReadContext,
    *,
    force: bool = False,
    client: Any = None,
) -> ImportSummary:
    """Fetch an .ics feed and import it; the validators advance with the data, in one go.

    Recurring series expand relative to "now", so the conditional headers are sent only
    when the stored expansion is from today: a feed unchanged for weeks is still expanded
    again once a day, and a 304 otherwise means there is nothing to do.
    """
    from connectors import ics

    started = time.perf_counter()
    summary = ImportSummary(kind="ics", path=ics.redact(url))
    calendar_id = ics.feed_id(url)
    key = {"source": ics.SOURCE, "stream": FEED_STREAM, "partition": calendar_id}
    today = ctx.now.astimezone(ctx.tz).date().isoformat()
    with store.session() as session:
        row = session.execute(
            select(col(SyncState.cursor)).where(
                *(getattr(SyncState, k) == v for k, v in key.items())
            )
        ).first()
    cursor = json.loads(row[0]) if row and row[0] else {}
    fresh = not force and cursor.get("expanded_on") == today
    feed = ics.fetch_feed(
        url,
        etag=cursor.get("etag", "") if fresh else "",
        last_modified=cursor.get("last_modified", "") if fresh else "",
        client=client,
    )
    if feed.body is None:
        summary.not_modified = True
        summary.seconds = time.perf_counter() - started
        return summary
    now = utcnow()
    records = ics.records_from_bytes(feed.body, calendar_id, ctx, summary.path)
    with store.transaction() as session:
        write_records(session, ics.SOURCE, records, summary, now=now, stop=ctx.stop)
        state = {
            "cursor": json.dumps(
                {"etag": feed.etag, "last_modified": feed.last_modified, "expanded_on": today}
            ),
            "status": "ok",
            "last_attempt_at": now,
            "last_success_at": now,
            "last_records": summary.records,
        }
        upsert(session, SyncState, [{**key, **state}], keys=tuple(key), update=tuple(state))
    summary.seconds = time.perf_counter() - started
    return summary
