"""The long-running daemon: cycles under APScheduler until SIGTERM/SIGINT."""

from __future__ import annotations

import logging
import signal
from datetime import UTC, datetime
from typing import Any

from bridge.config import Settings
from bridge.errors import BridgeError
from bridge.pipeline import run_cycle
from bridge.store import Store

log = logging.getLogger("rhythm_bridge.daemon")


def _cycle(settings: Settings, store: Store) -> None:
    # A failing cycle is logged and the next one runs on schedule: the daemon stays up.
    try:
        run_cycle(settings, store)
    except BridgeError as err:
        log.error("cycle failed: %s", err)
    except Exception:
        log.exception("cycle crashed")


def _refit_adapter(settings: Settings, store: Store) -> None:
    """Refit the per-user adapter when it is missing or older than the configured days."""
    import time

    from bridge.adapter import ADAPTER_FILE, refit

    path = settings.data_path / ADAPTER_FILE
    max_age = settings.runner.adapter_refit_days * 86400
    # Decided from the file's age, not the job's timer, so reboots do not postpone it.
    if path.exists() and time.time() - path.stat().st_mtime < max_age:
        return
    try:
        refit(store, settings)
    except BridgeError as err:
        log.error("adapter refit failed: %s", err)
    except Exception:
        log.exception("adapter refit crashed")


def build_scheduler(settings: Settings, store: Store) -> Any:
    from apscheduler.schedulers.blocking import BlockingScheduler

    scheduler = BlockingScheduler(timezone=UTC)
    scheduler.add_job(
        _cycle,
        "interval",
        args=(settings, store),
        id="cycle",
        minutes=settings.schedule.cycle_minutes,
        next_run_time=datetime.now(UTC),
        # After a suspend or a long stall run once, not once per missed interval.
        coalesce=True,
        max_instances=1,
        misfire_grace_time=None,
    )
    if settings.runner.adapter_refit_days > 0:
        scheduler.add_job(
            _refit_adapter,
            "interval",
            args=(settings, store),
            id="adapter",
            hours=1,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=None,
        )
    return scheduler


def run_daemon(settings: Settings, store: Store) -> None:
    """Run cycles until a stop signal; a cycle in progress finishes before exit."""
    scheduler = build_scheduler(settings, store)

    def stop(signum: int, _frame: Any) -> None:
        log.info("received %s, stopping after the current cycle", signal.Signals(signum).name)
        scheduler.shutdown(wait=False)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info("daemon started: a cycle every %d minutes", settings.schedule.cycle_minutes)
    scheduler.start()
    log.info("daemon stopped")
