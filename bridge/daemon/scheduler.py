"""The long-running daemon: cycles under APScheduler until SIGTERM/SIGINT.

Under systemd (Type=notify) it reports READY once scheduling starts, pings the watchdog
while cycles make progress, and reports STOPPING on a stop signal. A cycle in progress
finishes its transaction before the process exits; if systemd kills it anyway, the
transaction rolls back and nothing partial is committed.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from bridge.config import Settings
from bridge.cycle.run import run_cycle
from bridge.daemon.heap import trim_heap, tune_heap
from bridge.daemon.systemd import sd_notify, watchdog_interval
from bridge.errors import BridgeError, Cancelled
from bridge.store import Store

log = logging.getLogger("rhythm_bridge.daemon")

# A cycle running longer than this is taken to be hung: the watchdog stops pinging.
MAX_CYCLE_SECONDS = 30 * 60
# After a stop signal the running cycle has this long to reach a step boundary (an import
# checks at every batch of 5,000 records) before the process exits anyway, its open
# transaction rolled back by the database; well inside systemd's TimeoutStopSec (120 s
# in our unit). A step can outlast it on a loaded board: one sync's page, one write. The
# meter step runs in a child process, which the stop ends at once (cycle/meters_apart.py),
# unless `[meters] in_process` keeps it in the daemon.
STOP_SECONDS = 20


class CycleTracker:
    """When the running cycle started (None when idle), shared with the watchdog job.

    `after` runs after each cycle (the MQTT link publishes the new state).
    """

    def __init__(self, after: Callable[[], Any] | None = None) -> None:
        self._lock = threading.Lock()
        self.started: float | None = None
        self.after = after
        self.stop = threading.Event()  # set on SIGTERM: the running cycle ends at a boundary
        self._idle = threading.Event()
        self._idle.set()

    def wait_idle(self, timeout: float) -> bool:
        """Wait for the running cycle (if any) to end; False if it is still running."""
        return self._idle.wait(timeout)

    def healthy(self, now: float | None = None) -> bool:
        with self._lock:
            return (
                self.started is None or (now or time.monotonic()) - self.started < MAX_CYCLE_SECONDS
            )

    def run(self, settings: Settings, store: Store) -> None:
        self.run_each([(settings, store)])

    def run_each(self, people: Sequence[tuple[Settings, Store]]) -> None:
        """One cycle for each person of a household, one after the other (a small box
        holds one cycle's memory at a time); a stop ends it at the next boundary."""
        with self._lock:
            if self.stop.is_set():
                return
            self.started = time.monotonic()
            self._idle.clear()
        try:
            for settings, store in people:
                if self.stop.is_set():
                    break
                self._cycle(settings, store, f" for {settings.person}" if len(people) > 1 else "")
            if self.after is not None:
                self.after()
        except Exception:
            log.exception("publishing after the cycle crashed")
        finally:
            with self._lock:
                self.started = None
            trim_heap()
            self._idle.set()

    def _cycle(self, settings: Settings, store: Store, who: str) -> None:
        # A failing cycle is logged and the next one runs on schedule: the daemon stays up,
        # and one person's failure does not keep the next person's cycle from running.
        try:
            run_cycle(settings, store, stop=self.stop, meters_apart=not settings.meters.in_process)
        except Cancelled:
            log.info("cycle%s stopped at a step boundary; nothing partial was stored", who)
        except BridgeError as err:
            log.error("cycle%s failed: %s", who, err)
        except Exception:
            log.exception("cycle%s crashed", who)


def _watchdog(tracker: CycleTracker) -> None:
    if tracker.healthy():
        sd_notify("WATCHDOG=1")
    else:
        log.error("a cycle has run for over %d s; not pinging the watchdog", MAX_CYCLE_SECONDS)


def _refit_adapter(settings: Settings, store: Store) -> None:
    """Refit the per-user adapter when it is missing or older than the configured days."""
    from bridge.learning.adapter import ADAPTER_FILE, refit

    path = settings.person_path / ADAPTER_FILE
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


def _refit_adapters(people: Sequence[tuple[Settings, Store]]) -> None:
    for settings, store in people:
        _refit_adapter(settings, store)


def _ask_checkins(people: Sequence[tuple[Settings, Store]]) -> None:
    """Each person's daily check-in question, when their `[notify] checkin_at` has come."""
    from bridge.out.notify import notify_checkin

    now = datetime.now(UTC)
    for settings, store in people:
        try:
            notify_checkin(store, settings, now)
        except BridgeError as err:
            log.error("check-in question for %s failed: %s", settings.person, err)
        except Exception:
            log.exception("check-in question for %s crashed", settings.person)


def build_scheduler(
    settings: Settings,
    store: Store,
    tracker: CycleTracker | None = None,
    people: Sequence[tuple[Settings, Store]] = (),
) -> Any:
    """The daemon's jobs for `people` (each person's settings and store; default: the one
    person of `settings` and `store`)."""
    from apscheduler.schedulers.blocking import BlockingScheduler

    people = list(people) or [(settings, store)]
    tracker = tracker or CycleTracker()
    scheduler = BlockingScheduler(timezone=UTC)
    scheduler.add_job(
        tracker.run_each,
        "interval",
        args=(people,),
        id="cycle",
        minutes=settings.schedule.cycle_minutes,
        next_run_time=datetime.now(UTC),
        # After a suspend or a long stall run once, not once per missed interval.
        coalesce=True,
        max_instances=1,
        misfire_grace_time=None,
    )
    interval = watchdog_interval()
    if interval is not None:
        scheduler.add_job(
            _watchdog,
            "interval",
            args=(tracker,),
            id="watchdog",
            seconds=interval,
            coalesce=True,
            max_instances=1,
            next_run_time=datetime.now(UTC),
        )
    asking = [(s, st) for s, st in people if s.notify.checkin_at]
    if asking:
        # Every minute: the question goes out within a minute of the time each person
        # picked; whether it went today is kept in their database rows, not here.
        scheduler.add_job(
            _ask_checkins,
            "interval",
            args=(asking,),
            id="checkin",
            minutes=1,
            next_run_time=datetime.now(UTC),
            coalesce=True,
            max_instances=1,
            misfire_grace_time=None,
        )
    if settings.runner.adapter_refit_days > 0:
        scheduler.add_job(
            _refit_adapters,
            "interval",
            args=(people,),
            id="adapter",
            hours=1,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=None,
        )
    return scheduler


def run_daemon(
    settings: Settings, store: Store, people: Sequence[tuple[Settings, Store]] = ()
) -> None:
    """Run cycles until a stop signal; a cycle in progress finishes before exit.

    `people`: each person's settings and store, for a household (default: the one person
    of `settings` and `store`). One daemon serves the whole installation (one lock).
    With [web] enabled the page is served from a thread and stopped after the scheduler.
    """
    from bridge.out.status import daemon_lock

    with daemon_lock(settings.data_path):
        _run_daemon(settings, store, list(people) or [(settings, store)])


def _run_daemon(settings: Settings, store: Store, people: list[tuple[Settings, Store]]) -> None:
    tune_heap()
    # Home Assistant gets one device per person (their own base topic, bridge.config).
    links = [link for theirs in people if (link := _mqtt_link(*theirs)) is not None]
    tracker = CycleTracker((lambda: [link.publish() for link in links]) if links else None)
    scheduler = build_scheduler(settings, store, tracker, people)
    web = None
    if settings.web.enabled or settings.push.enabled:
        from bridge.web.server import BackgroundServer

        # [push] alone serves only the push endpoints: the page stays off.
        web = BackgroundServer(settings, store, page=settings.web.enabled).start()

    def stop(signum: int, _frame: Any) -> None:
        log.info(
            "received %s, stopping after the current cycle (at its next step boundary)",
            signal.Signals(signum).name,
        )
        sd_notify("STOPPING=1")
        tracker.stop.set()
        # Not from the handler itself: the signal can land while this (main) thread holds
        # the job pool's lock in submit(), and shutdown() would wait on it forever.
        threading.Thread(target=scheduler.shutdown, kwargs={"wait": False}, name="stop").start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info(
        "daemon started: a cycle every %d minutes, the first now (%s), in the zone %s",
        settings.schedule.cycle_minutes,
        datetime.now(settings.tz).strftime("%Y-%m-%d %H:%M %Z"),
        settings.tz,
    )
    sd_notify("READY=1\nSTATUS=scheduling cycles")
    try:
        scheduler.start()
        if not tracker.wait_idle(STOP_SECONDS):
            # A stop that was asked for, with nothing partial committed: a clean exit.
            log.warning(
                "the cycle reached no step boundary within %d s; exiting now, its open "
                "transaction is rolled back",
                STOP_SECONDS,
            )
            if web is not None:
                web.stop()
            for link in links:
                link.close()
            logging.shutdown()
            os._exit(0)
    finally:
        if web is not None:
            web.stop()
        for link in links:
            link.close()
    log.info("daemon stopped")


def _mqtt_link(settings: Settings, store: Store) -> Any:
    """With [mqtt] on, a link that connects in the background (the broker may be down).

    With it off, entities published earlier are removed once (a down broker: next start).
    """
    from bridge.cycle.answer import answer
    from bridge.cycle.questions import calendar_questions
    from bridge.out.mqtt.link import MqttLink, remove_entities

    if settings.mqtt.enabled:
        # The buttons answer exactly like the page's: a Reschedule proposes the next window.
        link = MqttLink(
            settings,
            store,
            answer=lambda rec_id, response, now, channel: answer(
                store, settings, rec_id, response, now, channel=channel
            ),
        )
        # The select shows the one title whose answer would most likely set the most time right.
        return link.ask_with(
            lambda now: [q.as_dict() for q in calendar_questions(store, settings, now, 1)]
        ).start()
    try:
        message = remove_entities(settings, store, timeout=10.0)
        if message:
            log.info("%s", message)
    except BridgeError as err:
        log.error("%s", err)
    return None
