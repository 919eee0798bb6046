import json
import signal
import socket
from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import select

from bridge.daemon.scheduler import STOP_SECONDS, build_scheduler
from bridge.store import Store
from bridge.store.models import CalendarEvent, SyncState
from tests.conftest import SAMPLE
from tests.helpers import cli_process, validate_snapshot, wait_until, wal_bigger_than, write_config


def test_the_cycle_job_coalesces_and_never_overlaps(settings, store):
    scheduler = build_scheduler(settings, store)
    job = scheduler.get_job("cycle")
    assert job.coalesce is True and job.max_instances == 1
    assert job.trigger.interval.total_seconds() == settings.schedule.cycle_minutes * 60
    assert {j.id for j in scheduler.get_jobs()} == {"cycle", "adapter"}


def test_the_adapter_job_is_off_when_configured_so(settings, store):
    off = settings.model_copy(
        update={"runner": settings.runner.model_copy(update={"adapter_refit_days": 0})}
    )
    assert [j.id for j in build_scheduler(off, store).get_jobs()] == ["cycle"]


def test_the_daemon_runs_a_cycle_and_stops_cleanly_on_sigterm(tmp_path):
    cfg = write_config(
        tmp_path / "c.toml",
        tmp_path / "data",
        ics=f'[sources.ics]\nenabled = true\npaths = ["{SAMPLE / "calendar.ics"}"]',
    )
    snapshot = tmp_path / "data" / "latest.json"
    with cli_process(cfg, "run") as proc:
        wait_until(snapshot.exists, proc, timeout=60)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, output
    assert "stopping after the current cycle" in output and "daemon stopped" in output
    validate_snapshot(json.loads(snapshot.read_text()))
    # One line of ours at the start, in the person's zone; none of APScheduler's INFO
    # lines (nine at start, in UTC, and two per cycle).
    assert "in the zone Europe/Berlin" in output
    assert "apscheduler" not in output, output


def test_the_daemon_talks_to_systemd(tmp_path):
    sock_path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(sock_path))
    sock.settimeout(60)
    cfg = write_config(tmp_path / "c.toml", tmp_path / "data")
    env = {"NOTIFY_SOCKET": str(sock_path), "WATCHDOG_USEC": "2000000", "WATCHDOG_PID": ""}
    messages = []
    with sock, cli_process(cfg, "run", quiet=True, env=env) as proc:
        while "WATCHDOG=1" not in messages:
            messages.append(sock.recv(256).decode())
        proc.send_signal(signal.SIGTERM)
        while "STOPPING=1" not in messages:
            messages.append(sock.recv(256).decode())
        proc.wait(30)
    assert messages[0].startswith("READY=1")
    assert proc.returncode == 0


def test_every_cycle_gives_its_freed_heap_back_even_when_it_fails(settings, store, monkeypatch):
    # Without the trim, glibc's per-thread arenas keep what a cycle's frames freed and a
    # months-long daemon's RSS creeps up (benchmarks/soak.py).
    import bridge.daemon.heap

    trims = []
    monkeypatch.setattr(bridge.daemon.scheduler, "trim_heap", lambda: trims.append(1))
    tracker = bridge.daemon.scheduler.CycleTracker()
    tracker.run(settings, store)
    monkeypatch.setattr(bridge.daemon.scheduler, "run_cycle", lambda *a: 1 / 0)
    tracker.run(settings, store)  # logged as "cycle crashed"; the daemon stays up
    assert trims == [1, 1] and tracker.healthy()


def test_the_heap_settings_find_glibc_and_are_a_no_op_elsewhere():
    import platform

    import bridge.daemon.heap

    bridge.daemon.heap.tune_heap()
    bridge.daemon.heap.trim_heap()  # the second lookup reuses the first
    assert (bridge.daemon.heap._glibc() is not None) == (platform.libc_ver()[0] == "glibc")


def _busy_calendar(path, events: int) -> None:
    """`events` single events spread over the import window around now."""
    now = datetime.now(UTC).replace(microsecond=0)
    with path.open("w", newline="") as fh:
        fh.write("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\n")
        for i in range(events):
            start = now - timedelta(days=30) + timedelta(minutes=i)
            stamp = start.strftime("%Y%m%dT%H%M%SZ")
            end = (start + timedelta(minutes=30)).strftime("%Y%m%dT%H%M%SZ")
            fh.write(
                f"BEGIN:VEVENT\r\nUID:e{i}\r\nDTSTART:{stamp}\r\nDTEND:{end}\r\n"
                f"SUMMARY:Meeting {i}\r\nEND:VEVENT\r\n"
            )
        fh.write("END:VCALENDAR\r\n")


@pytest.mark.sqlite_only  # the daemon keeps its store in its data dir
def test_a_stop_mid_import_ends_at_the_next_batch_and_stores_nothing_partial(tmp_path):
    cal = tmp_path / "busy.ics"
    _busy_calendar(cal, 40_000)
    data = tmp_path / "data"
    cfg = write_config(
        tmp_path / "c.toml", data, ics=f'[sources.ics]\nenabled = true\npaths = ["{cal}"]'
    )
    with cli_process(cfg, "run") as proc:
        # A WAL past 2 MB: the import's transaction holds a batch or more, uncommitted.
        wait_until(wal_bigger_than(data), proc, timeout=300)
        proc.send_signal(signal.SIGTERM)
        # A hang guard, not a timing assertion: the daemon's own bound is STOP_SECONDS.
        output, _ = proc.communicate(timeout=STOP_SECONDS + 60)
    assert proc.returncode == 0, output
    # At the next batch; on a very busy machine perhaps only at the daemon's own bound.
    assert (
        "cycle stopped at a step boundary" in output and "daemon stopped" in output
    ) or "reached no step boundary" in output, output
    store = Store(f"sqlite:///{data / 'rhythm-bridge.db'}")
    try:
        assert store.count(CalendarEvent) == 0  # the half-written import rolled back
        assert store.get_meta("last_cycle_at") is None
        with store.session() as s:
            assert s.exec(select(SyncState).where(SyncState.source == "ics")).all() == []
    finally:
        store.dispose()
    assert not (data / "latest.json").exists()


def test_the_one_person_path_never_loads_the_worker_mode() -> None:
    """The daemon, a cycle and the CLI run without procrastinate or pyrate-limiter (the
    `workers` extra), and do not import them when they are installed."""
    import subprocess
    import sys

    code = (
        "import sys, bridge.cli.main, bridge.daemon.scheduler, bridge.cycle.run, "
        "bridge.intake.live, connectors.whoop; "
        "bad = [m for m in ('procrastinate', 'pyrate_limiter', 'bridge.daemon.workers') "
        "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_polling_interval_fits_every_persons_syncs_in_the_daily_quota() -> None:
    """WHOOP: 5 requests a sync, 10,000 a day, 80 % of it planned (docs/guides/many-people.md)."""
    from bridge.config import Settings
    from bridge.daemon.workers import poll_interval

    settings = Settings.model_validate({"sources": {"whoop": {"interval_minutes": 60}}})
    assert poll_interval(settings, "whoop", 2) == timedelta(minutes=60)  # configured
    assert poll_interval(settings, "whoop", 100) == timedelta(hours=1.5)
    assert poll_interval(settings, "whoop", 1000) == timedelta(hours=15)
    # A provider without a shared window keeps the configured interval.
    assert poll_interval(settings, "garmin", 1000) == timedelta(minutes=240)


def test_a_worker_caps_malloc_arenas_unless_the_environment_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import platform

    from bridge.daemon.heap import fewer_arenas

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("malloc arenas are glibc's")
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert fewer_arenas() is False  # the operator's setting stands
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    assert fewer_arenas() is True
