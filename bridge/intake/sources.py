"""Scheduled sources: which are enabled, which are due, and running one with its state.

Each source's failure is recorded on its SyncState row and never stops the others.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlmodel import col

from bridge.config import Settings
from bridge.errors import BridgeError, Cancelled, RateLimited, SourceError
from bridge.intake.ingest import ImportSummary, import_changed_file, import_feed, import_file
from bridge.store import Store, upsert
from bridge.store.models import SyncState
from connectors import registry
from connectors.base import ReadContext
from connectors.live import Progress, no_progress

log = logging.getLogger("rhythm_bridge.sync")

STATE_KEY = ("source", "stream", "partition")


@dataclass
class SyncOutcome:
    source: str
    status: str
    records: int = 0
    new: int = 0
    error: str | None = None
    seconds: float = 0.0
    retry_after: float | None = None
    skipped: int = 0  # records left out as unreadable or implausible

    def line(self) -> str:
        """The one-line report of this sync, as the CLI prints it."""
        skipped = f", {self.skipped} skipped as unreadable or implausible" if self.skipped else ""
        if self.status == "not_connected":
            return self.error or f"{self.source}: not connected"
        error = f" ({self.error})" if self.error else ""
        return (
            f"{self.source}: {self.status}, {self.records} records, {self.new} new{skipped}{error}"
        )


def _scan(folder: str, patterns: tuple[str, ...]) -> list[Path]:
    if not folder:
        return []
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise SourceError(f"watched folder {root} does not exist; create it or fix the config")
    return sorted({p for pat in patterns for p in root.glob(pat) if p.is_file()})


def _each(items: list[Any], run: Callable[[Any], ImportSummary]) -> tuple[int, int]:
    """Run every item; one bad file or feed does not stop the rest, but is reported."""
    records = new = 0
    first_error: BridgeError | None = None
    for item in items:
        try:
            summary = run(item)
        except Cancelled:
            raise
        except BridgeError as err:
            log.warning("sync item failed: %s", err)
            first_error = first_error or err
            continue
        records, new = records + summary.records, new + summary.new
    if first_error is not None:
        raise first_error  # the others were imported; the first failure is the status
    return records, new


def _watched(store: Store, ctx: ReadContext, folder: str, kinds: dict[str, str]) -> tuple[int, int]:
    """Import new or changed files of a watched folder (pattern -> import kind)."""
    paths = {p: kind for pattern, kind in kinds.items() for p in _scan(folder, (pattern,))}
    return _each(sorted(paths), lambda p: import_changed_file(store, paths[p], p, ctx))


def _ics(settings: Settings, store: Store, ctx: ReadContext, **_: Any) -> tuple[int, int]:
    # Recurring series expand relative to "now", so the same file is re-read (the
    # upserts make that free of duplicates) instead of being skipped by its hash.
    paths = [Path(p).expanduser() for p in settings.sources.ics.paths]
    records, new = _each(paths, lambda p: import_file(store, "ics", p, ctx, force=True))
    feeds = _each(list(settings.sources.ics.urls), lambda url: import_feed(store, url, ctx))
    return records + feeds[0], new + feeds[1]


def _live(source: str) -> Callable[..., tuple[int, int, int]]:
    def run(
        settings: Settings, store: Store, ctx: ReadContext, **options: Any
    ) -> tuple[int, int, int]:
        from bridge.intake.live import run_live

        return run_live(source, settings, store, ctx, **options)

    return run


def _watched_and_live(section: str) -> Callable[..., tuple[int, ...]]:
    """A section's run, derived from its specs: the files of its watched folders, then
    its live pull, if it has one.

    A live pull beside a watched folder (Garmin: export_dir and the Personal API) runs only
    when its credential is stored, so a person who only drops files is not told to run
    `auth`; with neither a folder nor a credential it runs anyway, so the person is told
    to (status reauth_required).
    """
    specs = registry.section_specs(section)
    own = registry.SCHEDULED[section]
    # One folder setting may feed several readers (a Garmin export ZIP and loose FIT files):
    # one scan, so a bad file never stops the readers of the other patterns.
    folders: dict[str, dict[str, str]] = {}
    for spec in specs:
        if spec.watch is not None:
            kinds = folders.setdefault(spec.watch.setting, {})
            kinds.update(dict.fromkeys(spec.watch.patterns, spec.cli))
    if not folders and not own.live:
        raise LookupError(f"{section}: no watched folder, no live pull and no runner of its own")
    pull = _live(section) if own.live else None

    def run(settings: Settings, store: Store, ctx: ReadContext, **options: Any) -> tuple[int, ...]:
        cfg = getattr(settings.sources, section)
        records = new = 0
        watched = False
        for setting, kinds in folders.items():
            folder = getattr(cfg, setting)
            watched = watched or bool(folder)
            found = _watched(store, ctx, folder, kinds)
            records, new = records + found[0], new + found[1]
        if pull is None:
            return records, new
        if not watched or _credential_stored(settings, own):
            api_records, api_new, skipped = pull(settings, store, ctx, **options)
            return records + api_records, new + api_new, skipped
        return records, new

    return run


def _credential_stored(settings: Settings, spec: registry.SourceSpec) -> bool:
    from bridge.auth.secrets import Secrets

    return spec.auth is not None and bool(Secrets.from_settings(settings).get(spec.auth.credential))


# Sources whose pull is not a watched folder or a live pull: .ics files and feed links.
_OWN_RUNNERS: dict[str, Callable[..., tuple[int, ...]]] = {"ics": _ics}

# source name -> how one scheduled pull of it runs: fn(settings, store, ctx, *, since=None,
# progress=...) -> (records, new) or (records, new, skipped). Derived from
# `connectors.registry`, in its order.
SCHEDULED: dict[str, Callable[..., tuple[int, ...]]] = {
    name: _OWN_RUNNERS.get(name) or _watched_and_live(name) for name in registry.SCHEDULED
}


# How the CLI spells each source (the `import` kinds and `auth` names use hyphens); the
# config section names (apple_health, google_calendar) stay accepted as the old spelling.
SOURCE_NAMES = {spec.cli: name for name, spec in registry.SCHEDULED.items()}
SOURCE_ALIASES = {
    **{name: name for name in registry.SCHEDULED},
    **{alias: name for name, spec in registry.SCHEDULED.items() for alias in spec.aliases},
}


def source_section(name: str) -> str | None:
    """The config section a CLI spelling of a source names, or None."""
    return SOURCE_NAMES.get(name) or SOURCE_ALIASES.get(name)


def enabled_sources(settings: Settings) -> list[str]:
    return [name for name in SCHEDULED if getattr(settings.sources, name).enabled]


def get_state(store: Store, source: str, stream: str = "", partition: str = "") -> SyncState | None:
    with store.session() as session:
        return session.execute(
            select(SyncState).where(
                col(SyncState.source) == source,
                col(SyncState.stream) == stream,
                col(SyncState.partition) == partition,
            )
        ).scalar_one_or_none()


def is_due(
    store: Store,
    settings: Settings,
    source: str,
    now: datetime,
    *,
    interval: timedelta | None = None,
    state: SyncState | None = None,
) -> bool:
    """Whether `source` is due; `interval` overrides its configured one (the workers'
    quota-derived interval), `state` its summary row when the caller read it already."""
    state = state or get_state(store, source)
    if state is None or state.last_attempt_at is None:
        return True
    if state.status in ("reauth_required", "not_connected"):
        return False  # pulling again cannot help until the person runs auth
    if state.retry_after is not None and now < state.retry_after:
        return False
    interval = interval or timedelta(minutes=getattr(settings.sources, source).interval_minutes)
    return now >= state.last_attempt_at + interval


def next_due(store: Store, settings: Settings, source: str) -> datetime | None:
    state = get_state(store, source)
    if state is None or state.last_attempt_at is None:
        return None
    interval = timedelta(minutes=getattr(settings.sources, source).interval_minutes)
    due = state.last_attempt_at + interval
    return max(due, state.retry_after) if state.retry_after else due


def record_outcome(store: Store, outcome: SyncOutcome, now: datetime) -> None:
    state = get_state(store, outcome.source)
    # Never connected is a state, not a failure: no error to keep once it is connected.
    error = None if outcome.status == "not_connected" else outcome.error
    row = {
        "source": outcome.source,
        "stream": "",
        "partition": "",
        "status": outcome.status,
        "last_attempt_at": now,
        "last_records": outcome.records,
        "records_total": (state.records_total if state else 0) + outcome.new,
        "last_success_at": now
        if outcome.error is None
        else (state.last_success_at if state else None),
        "last_error_at": now if error else (state.last_error_at if state else None),
        "last_error": error if error else (state.last_error if state else None),
        "retry_after": now + timedelta(seconds=outcome.retry_after)
        if outcome.retry_after
        else None,
        "cursor": state.cursor if state else None,
    }
    with store.transaction() as session:
        upsert(
            session,
            SyncState,
            [row],
            keys=STATE_KEY,
            update=tuple(k for k in row if k not in STATE_KEY),
        )


def run_source(
    store: Store,
    settings: Settings,
    source: str,
    ctx: ReadContext,
    *,
    since: datetime | None = None,
    progress: Progress = no_progress,
) -> SyncOutcome:
    """Pull one source now; any failure is recorded, logged, and returned, never raised."""
    started = time.perf_counter()
    stop = ctx.stop

    def checked(stage: str, count: int) -> None:
        # Live pulls report each page: a stop request ends the pull there, uncommitted.
        if stop is not None and stop.is_set():
            raise Cancelled()
        progress(stage, count)

    try:
        records, new, *skipped = SCHEDULED[source](
            settings, store, ctx, since=since, progress=checked
        )
        outcome = SyncOutcome(source, "ok", records, new, skipped=sum(skipped))
    except Cancelled:
        raise  # not the source's failure: nothing is recorded, the next cycle pulls again
    except RateLimited as err:
        outcome = SyncOutcome(source, err.status, error=str(err), retry_after=err.retry_after)
    except SourceError as err:
        outcome = SyncOutcome(source, err.status, error=str(err))
    except BridgeError as err:
        outcome = SyncOutcome(source, "error", error=str(err))
    outcome.seconds = time.perf_counter() - started
    record_outcome(store, outcome, ctx.now)
    log.info(
        "sync source=%s status=%s records=%d new=%d skipped=%d seconds=%.2f%s",
        source,
        outcome.status,
        outcome.records,
        outcome.new,
        outcome.skipped,
        outcome.seconds,
        f" error={outcome.error!r}" if outcome.error else "",
    )
    return outcome


def _set_status(store: Store, source: str, **fields: Any) -> None:
    row = {"source": source, "stream": "", "partition": "", **fields}
    with store.transaction() as session:
        upsert(session, SyncState, [row], keys=STATE_KEY, update=tuple(fields))


def mark_authorized(store: Store, source: str) -> None:
    """After a successful `auth`: clear reauth_required so the next cycle pulls it."""
    if get_state(store, source) is not None:
        _set_status(store, source, status="authorized", retry_after=None, last_attempt_at=None)


def mark_revoked(store: Store, source: str, now: datetime) -> None:
    """After `auth revoke`: stop pulling until the person runs `auth` again."""
    _set_status(
        store,
        source,
        status="reauth_required",
        last_error="authorization revoked by `rhythm-bridge auth revoke`",
        last_error_at=now,
    )


def read_context(settings: Settings, now: datetime) -> ReadContext:
    ics = settings.sources.ics
    return ReadContext(
        tz=settings.tz,
        now=now,
        max_instances_per_event=ics.max_instances_per_event,
        max_instances_per_file=ics.max_instances_per_file,
        whoop_journal=settings.sources.whoop.import_journal,
    )
