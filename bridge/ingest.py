"""Importing a file: stream a reader's records into the store in one transaction.

The file's content hash is recorded in the same transaction, so a watched folder imports
each version once, a killed import leaves nothing behind, and re-running it is the fix.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import and_, not_, select, tuple_, update
from sqlmodel import Session

from bridge.errors import InputError
from bridge.store import Store, upsert
from bridge.store.db import utcnow
from bridge.store.models import CalendarEvent, ImportedFile, Reading
from connectors import file_source
from connectors.base import EventRecord, ReadContext, ReadingRecord, ReplaceScope
from connectors.validate import check_event, check_reading

log = logging.getLogger("rhythm_bridge.ingest")

BATCH = 5000
READING_KEY = ("source", "metric", "origin", "start_utc", "end_utc", "label")
EVENT_KEY = ("source", "calendar_id", "uid", "recurrence_id")
EVENT_UPDATE = (
    "title",
    "start_utc",
    "end_utc",
    "utc_offset_min",
    "all_day",
    "status",
    "transparency",
    "event_type",
    "attendee_count",
    "self_response",
    "content_hash",
)


@dataclass
class ImportSummary:
    """What one import did, for the one-line report."""

    kind: str
    path: str
    records: int = 0
    new: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    cancelled: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    skipped_same_file: bool = False
    seconds: float = 0.0

    @property
    def known(self) -> int:
        return self.records - self.new

    def line(self) -> str:
        if self.skipped_same_file:
            return f"{self.path}: already imported (same content), nothing to do"
        types = ", ".join(f"{k} {v}" for k, v in sorted(self.by_type.items()))
        extra = f", {self.cancelled} cancelled" if self.cancelled else ""
        if self.skipped:
            extra += f", {sum(self.skipped.values())} implausible skipped"
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
    stmt = select(ImportedFile.id).where(ImportedFile.kind == kind, ImportedFile.sha256 == sha)
    return session.execute(stmt).first() is not None


def write_records(
    session: Session,
    source: str,
    records: Iterable[ReadingRecord | EventRecord | ReplaceScope],
    summary: ImportSummary,
    *,
    now: datetime,
    progress: Callable[[int], None] | None = None,
) -> None:
    """Upsert a stream of records in batches inside the caller's transaction."""
    readings: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    scopes: list[ReplaceScope] = []
    seen_events: dict[str, set[tuple[str, str]]] = {}

    def flush() -> None:
        if readings:
            summary.new += upsert(
                session,
                Reading,
                readings,
                keys=READING_KEY,
                update=("value", "unit", "device", "utc_offset_min"),
            )
            readings.clear()
        if events:
            summary.new += upsert(
                session,
                CalendarEvent,
                events,
                keys=EVENT_KEY,
                update=EVENT_UPDATE,
                touch=("updated_at",),
            )
            events.clear()
        if progress:
            progress(summary.records)

    # Plausibility is judged against the real clock: a pull's `now` may be a logical time
    # (a backfill, a test), but no measurement can come from after this moment.
    wall_clock = utcnow()
    for rec in records:
        if isinstance(rec, ReadingRecord | EventRecord):
            check = check_reading if isinstance(rec, ReadingRecord) else check_event
            reason = check(rec, wall_clock)
            if reason is not None:
                kind = getattr(rec, "metric", "event")
                if not summary.skipped[kind]:  # one warning per kind, not one per record
                    log.warning(
                        "%s: skipping implausible %s record: %s", summary.path, kind, reason
                    )
                summary.skipped[kind] += 1
                continue
        if isinstance(rec, ReadingRecord):
            readings.append(rec.row(source, now))
            summary.by_type[rec.metric] += 1
        elif isinstance(rec, EventRecord):
            events.append(rec.row(source, now))
            seen_events.setdefault(rec.calendar_id, set()).add((rec.uid, rec.recurrence_id))
            summary.by_type["event"] += 1
        else:
            scopes.append(rec)
            continue
        summary.records += 1
        if len(readings) + len(events) >= BATCH:
            flush()
    flush()
    for scope in scopes:
        summary.cancelled += cancel_missing(
            session, source, scope, seen_events.get(scope.calendar_id, set()), now
        )


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
        table.c.source == source,
        table.c.calendar_id == scope.calendar_id,
        table.c.start_utc >= scope.start,
        table.c.start_utc < scope.end,
        table.c.status != "cancelled",
    )
    if seen:
        cond = and_(cond, not_(tuple_(table.c.uid, table.c.recurrence_id).in_(list(seen))))
    result = session.connection().execute(
        update(table)
        .where(cond)
        .values(status="cancelled", updated_at=now, content_hash="cancelled")
    )
    return max(0, result.rowcount or 0)


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
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    started = time.perf_counter()
    summary = ImportSummary(kind=kind, path=str(path))
    sha = file_sha256(path)
    now = utcnow()
    with store.transaction() as session:
        if not force and already_imported(session, kind, sha):
            summary.skipped_same_file = True
            return summary
        write_records(
            session, module.SOURCE, module.read(path, ctx), summary, now=now, progress=progress
        )
        upsert(
            session,
            ImportedFile,
            [
                {
                    "kind": kind,
                    "sha256": sha,
                    "path": str(path),
                    "size": path.stat().st_size,
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
