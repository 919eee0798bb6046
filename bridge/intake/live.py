"""Running a live (API) source: read its cursors, pull, then write data + cursors at once.

The connector's `pull` touches only the network; everything it returns is written here in
one transaction, so a crash at any point leaves either the old cursors with the old data
or the new cursors with the new data, never a cursor ahead of its records.
"""

from __future__ import annotations

import logging
from datetime import datetime
from importlib import import_module
from typing import Any

from sqlalchemy import select, update
from sqlmodel import Session, col

from bridge.auth.secrets import Secrets
from bridge.config import Settings
from bridge.errors import SourceError
from bridge.intake.ingest import ImportSummary, write_records
from bridge.store import Store, upsert
from bridge.store.db import person_of
from bridge.store.models import CalendarEvent, SyncState
from connectors.base import ReadContext
from connectors.live import Cancellation, Cursors, Progress, PullResult, no_progress
from connectors.registry import SCHEDULED

log = logging.getLogger("rhythm_bridge.sync")

# config section name -> connector module (imported when it runs: Google's client is big)
LIVE_SOURCES = {name: spec.module for name, spec in SCHEDULED.items() if spec.live}


def load_cursors(store: Store, source: str) -> Cursors:
    """Every stream cursor of a source (the source's own summary row has stream "")."""
    with store.session() as session:
        rows = session.execute(
            select(col(SyncState.stream), col(SyncState.partition), col(SyncState.cursor)).where(
                col(SyncState.source) == source, col(SyncState.stream) != ""
            )
        ).all()
    return {(stream, partition): cursor for stream, partition, cursor in rows}


def save_cursors(session: Session, source: str, cursors: Cursors, now: datetime) -> None:
    rows = [
        {
            "source": source,
            "stream": stream,
            "partition": partition,
            "cursor": cursor,
            "status": "ok",
            "last_attempt_at": now,
            "last_success_at": now,
        }
        for (stream, partition), cursor in cursors.items()
    ]
    if rows:
        keys = ("source", "stream", "partition")
        upsert(
            session, SyncState, rows, keys=keys, update=tuple(k for k in rows[0] if k not in keys)
        )


def cancel(session: Session, source: str, item: Cancellation, now: datetime) -> int:
    """Mark stored events cancelled: one instance, or every row of a uid."""
    table = CalendarEvent.__table__  # type: ignore[attr-defined]
    cond = (
        (table.c.person == person_of(session))
        & (table.c.source == source)
        & (table.c.calendar_id == item.calendar_id)
        & (table.c.uid == item.uid)
        & (table.c.status != "cancelled")
    )
    if item.recurrence_id is not None:
        cond &= table.c.recurrence_id == item.recurrence_id
    result = session.connection().execute(
        update(table)
        .where(cond)
        .values(status="cancelled", updated_at=now, content_hash="cancelled")
    )
    return max(0, result.rowcount or 0)


def commit(store: Store, source: str, result: PullResult, now: datetime) -> ImportSummary:
    """Write records, cancellations and cursors of one pull in one transaction."""
    summary = ImportSummary(kind=source, path=f"{source} API")
    with store.transaction() as session:
        write_records(session, source, result.records, summary, now=now)
        for item in result.cancellations:
            summary.cancelled += cancel(session, source, item, now)
        save_cursors(session, source, result.cursors, now)
    return summary


def run_live(
    source: str,
    settings: Settings,
    store: Store,
    ctx: ReadContext,
    *,
    since: datetime | None = None,
    progress: Progress = no_progress,
    **connector_options: Any,
) -> tuple[int, int, int]:
    """Pull one live source now and store what it returned; (records, new, skipped)."""
    module = import_module(LIVE_SOURCES[source])
    secrets = Secrets.from_settings(settings)
    result = module.pull(
        settings,
        secrets,
        ctx,
        load_cursors(store, source),
        since=since,
        progress=progress,
        **connector_options,
    )
    progress("saving", len(result.records))
    summary = commit(store, source, result, ctx.now)
    count = sum(summary.skipped.values())
    if count:
        # Counted like an import's skips: the pull succeeded, but not every record was usable.
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(summary.skipped.items()))
        log.warning(
            "%s: %d record%s skipped as unreadable or implausible (%s); the rest was stored",
            source,
            count,
            "" if count == 1 else "s",
            kinds,
        )
    if result.errors:
        raise SourceError(
            f"{source}: stored {summary.records} records, but: " + "; ".join(result.errors)
        )
    return summary.records + summary.cancelled, summary.new + summary.cancelled, count
