"""One cycle: sync due sources -> classify new events -> recompute meter slots ->
recommend for the coming slot -> write the JSON snapshot.

Every step is idempotent: running the same cycle twice leaves the same rows.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bridge.config import Settings
from bridge.cycle.classify import classify_events
from bridge.cycle.recommend import NoWindow, recommend
from bridge.cycle.tasks import classify_tasks
from bridge.errors import BridgeError, Cancelled
from bridge.files import private_dir
from bridge.intake.sources import SyncOutcome, enabled_sources, is_due, read_context, run_source
from bridge.store import Store
from bridge.store.models import Recommendation

log = logging.getLogger("rhythm_bridge.cycle")


@dataclass
class CycleReport:
    now: datetime
    synced: list[SyncOutcome] = field(default_factory=list)
    classified: int = 0
    slots: int = 0
    recommendation: dict[str, Any] | None = None
    implicit: dict[str, list[int]] = field(default_factory=dict)
    notified: dict[str, str] = field(default_factory=dict)
    google_write: dict[str, Any] = field(default_factory=dict)
    snapshot: str | None = None
    seconds: float = 0.0


@contextmanager
def data_lock(data_dir: Path, timeout: float = 120.0) -> Iterator[None]:
    """One cycle at a time per data dir (the daemon and a manual run must not overlap)."""
    private_dir(data_dir)
    path = data_dir / ".cycle.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise BridgeError(
                        f"another rhythm-bridge cycle holds {path}; try again later"
                    ) from None
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def answer_implicitly(store: Store, settings: Settings, now: datetime) -> dict[str, list[int]]:
    """Calendar-driven accepts and reschedules, and expiry of unanswered recommendations."""
    from bridge.learning.implicit import detect

    found = detect(store, settings, now)
    return {"accepted": found.accepted, "rescheduled": found.rescheduled, "expired": found.expired}


def announce(
    store: Store, settings: Settings, rec: Recommendation | NoWindow, now: datetime
) -> dict:
    """Notify about the recommendation (or that the calendar leaves no window) once per
    channel; a failing notifier never stops a cycle."""
    from bridge.out.notify import notify_no_window, notify_recommendation

    try:
        if isinstance(rec, NoWindow):
            return notify_no_window(store, settings, now)
        return notify_recommendation(store, settings, rec, now)
    except Exception:
        log.exception("notifications crashed; the cycle goes on")
        return {}


def write_to_google(store: Store, settings: Settings, now: datetime) -> dict[str, Any]:
    """The opt-in write-back of answered suggestions; it never stops a cycle."""
    if not settings.google_write.enabled:
        return {}
    from bridge.out.google_write import push

    try:
        return push(store, settings, now).as_dict()
    except Exception:
        log.exception("google_write crashed; the cycle goes on")
        return {"status": "error"}


def _meter_child(apart: bool) -> Any:
    """The meter step's child, started now so that it imports while the cycle syncs."""
    if not apart:
        return nullcontext()
    from bridge.cycle.meters_apart import MeterChild

    return MeterChild()


def run_cycle(
    settings: Settings,
    store: Store,
    now: datetime | None = None,
    *,
    only: list[str] | None = None,
    force_sync: bool = False,
    progress: Any = None,
    stop: threading.Event | None = None,
    meters_apart: bool = False,
) -> CycleReport:
    """Run one full cycle; sources that fail are recorded and the rest carry on.

    With `stop` set (the daemon is stopping) the cycle ends at the next step boundary, or
    at the next batch of an import, with Cancelled: every step is its own transaction,
    so what was done is whole and what was not is redone by the next cycle.

    `meters_apart` (the daemon) runs the meter step in a child process, so that the
    long-running process never imports pandas (bridge/cycle/meters_apart.py).
    """
    from bridge.out.snapshot import build_snapshot, write_snapshot

    started = time.perf_counter()
    now = (now or datetime.now(UTC)).astimezone(UTC)
    report = CycleReport(now=now)

    def boundary() -> None:
        if stop is not None and stop.is_set():
            raise Cancelled()

    with data_lock(settings.data_path), _meter_child(meters_apart) as child:
        ctx = replace(read_context(settings, now), stop=stop)
        for source in only if only is not None else enabled_sources(settings):
            boundary()
            if force_sync or is_due(store, settings, source, now):
                report.synced.append(run_source(store, settings, source, ctx))
        boundary()
        report.classified = classify_events(store, settings)
        report.classified += classify_tasks(store, settings)
        boundary()
        if meters_apart:
            from bridge.cycle.meters_apart import recompute_apart

            report.slots = recompute_apart(store, settings, now, stop=stop, child=child)
        else:
            from bridge.cycle.validity import recompute_with_refit

            report.slots = recompute_with_refit(store, settings, now, progress=progress)
        boundary()
        rec = recommend(store, settings, now)
        if isinstance(rec, NoWindow):
            report.recommendation = {"id": None, "action": None, "no_window": rec.reason}
        else:
            report.recommendation = {
                "id": rec.id,
                "action": rec.action,
                "rationale": rec.rationale,
            }
        boundary()
        report.implicit = answer_implicitly(store, settings, now)
        boundary()
        report.notified = announce(store, settings, rec, now)
        boundary()
        report.google_write = write_to_google(store, settings, now)
        boundary()
        doc = build_snapshot(store, settings, now)
        report.snapshot = str(write_snapshot(doc, settings.export_path))
        with store.transaction() as session:
            store.set_meta(session, "last_cycle_at", now.isoformat())
    report.seconds = time.perf_counter() - started
    log.info(
        "cycle synced=%d classified=%d slots=%d recommendation=%s seconds=%.2f",
        len(report.synced),
        report.classified,
        report.slots,
        rec.action or "none (no window)",
        report.seconds,
    )
    return report
