"""Fault injection: the daemon must never lose, duplicate or half-write data."""

import errno
import json
import os
import re
import signal
import sqlite3
import threading
import time
from datetime import UTC, datetime, timedelta, timezone
from itertools import pairwise

import pytest
from sqlmodel import select

from bridge.cycle.run import run_cycle
from bridge.out.snapshot import write_snapshot
from bridge.store.models import MeterSnapshot
from tests.helpers import cli_process, wait_until, wal_bigger_than, write_config

STEP = (
    '<Record type="HKQuantityTypeIdentifierStepCount" sourceName="Watch" unit="count" '
    'startDate="{s}" endDate="{e}" value="{v}"/>\n'
)


def _big_export(path, n: int) -> None:
    # A fixed offset: minute steps across a DST jump would repeat wall-clock times.
    start = datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=1)))
    with path.open("w") as fh:
        fh.write('<?xml version="1.0" encoding="UTF-8"?>\n<HealthData locale="en_US">\n')
        for i in range(n):
            a = start + timedelta(minutes=i)
            fh.write(
                STEP.format(
                    s=a.strftime("%Y-%m-%d %H:%M:%S %z"),
                    e=(a + timedelta(seconds=50)).strftime("%Y-%m-%d %H:%M:%S %z"),
                    v=i % 97,
                )
            )
        fh.write("</HealthData>\n")


@pytest.mark.sqlite_only
def test_sigkill_in_the_middle_of_an_import_commits_nothing_and_a_rerun_completes(tmp_path):
    export = tmp_path / "export.xml"
    _big_export(export, 150_000)
    cfg = write_config(tmp_path / "c.toml", tmp_path / "data")
    args = ("import", "apple-health", str(export))
    with cli_process(cfg, *args, quiet=True) as proc:
        wait_until(wal_bigger_than(tmp_path / "data"), proc, timeout=120)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    db = sqlite3.connect(tmp_path / "data" / "rhythm-bridge.db")
    assert db.execute("SELECT count(*) FROM readings").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM imported_files").fetchone()[0] == 0
    db.close()
    with cli_process(cfg, *args) as proc:
        output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, output
    assert "150000 new" in output
    db = sqlite3.connect(tmp_path / "data" / "rhythm-bridge.db")
    assert db.execute("SELECT count(*) FROM readings").fetchone()[0] == 150_000
    db.close()


@pytest.mark.sqlite_only
def test_a_concurrent_writer_holding_the_database_only_delays_the_cycle(store, settings):
    conn = sqlite3.connect(store.engine.url.database, timeout=1, check_same_thread=False)
    conn.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    conn.execute("INSERT INTO meta (person, key, value) VALUES ('me', 'other', 'writer')")
    released = threading.Event()

    def release():
        time.sleep(1.5)
        conn.commit()
        released.set()

    t = threading.Thread(target=release)
    t.start()
    try:
        report = run_cycle(settings, store, now=datetime(2026, 11, 19, 7, 40, tzinfo=UTC))
    finally:
        t.join()
        conn.close()
    assert released.is_set() and report.recommendation is not None
    assert store.get_meta("other") == "writer"


def test_disk_full_on_the_snapshot_keeps_the_previous_file(tmp_path, monkeypatch):
    target = tmp_path / "latest.json"
    write_snapshot({"schema": "rhythm-bridge/snapshot@1", "n": 1}, target)
    real_fsync = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        write_snapshot({"schema": "rhythm-bridge/snapshot@1", "n": 2}, target)
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert json.loads(target.read_text())["n"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["latest.json"]  # no temp file left


def test_cycles_across_the_dst_night_give_consecutive_unique_slots(store, settings):
    # 2026-10-25: Berlin clocks go from 03:00 back to 02:00.
    night = datetime(2026, 10, 24, 20, 0, tzinfo=UTC)
    for hours in range(0, 14):
        run_cycle(settings, store, now=night + timedelta(hours=hours))
    with store.session() as s:
        keys = s.exec(select(MeterSnapshot.local_date, MeterSnapshot.slot)).all()
    assert len(keys) == len(set(keys))
    days = sorted({d for d, _ in keys})
    assert all((b - a).days == 1 for a, b in pairwise(days))


def test_resuming_after_three_days_asleep_runs_one_cycle_not_a_storm(settings, store):
    import time_machine
    from apscheduler.events import EVENT_JOB_SUBMITTED
    from apscheduler.schedulers.background import BackgroundScheduler

    from bridge.daemon.scheduler import build_scheduler

    blocking = build_scheduler(settings, store)
    job = blocking.get_job("cycle")
    submitted = []
    scheduler = BackgroundScheduler(timezone=UTC)
    scheduler.add_listener(lambda e: submitted.append(e.scheduled_run_times), EVENT_JOB_SUBMITTED)
    start = datetime(2026, 11, 19, 8, 0, tzinfo=UTC)
    with time_machine.travel(start, tick=True) as traveller:
        scheduler.add_job(
            lambda: None,
            job.trigger,
            id="cycle",
            coalesce=job.coalesce,
            max_instances=job.max_instances,
            misfire_grace_time=job.misfire_grace_time,
            next_run_time=start + timedelta(minutes=15),
        )
        scheduler.start()
        try:
            traveller.shift(timedelta(days=3))  # the machine slept for three days
            scheduler.wakeup()
            deadline = time.monotonic() + 5
            while not submitted and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.3)
        finally:
            scheduler.shutdown(wait=True)
    assert len(submitted) == 1, submitted  # one run...
    assert len(submitted[0]) == 1  # ...coalesced from the ~288 missed ones


@pytest.mark.sqlite_only
def test_sigterm_in_the_middle_of_a_sync_rolls_it_back_and_the_next_run_finishes_it(tmp_path):
    # A stop must end well inside systemd's stop timeout whatever the cycle does (a 2 GB
    # export takes minutes): the import stops at its next batch, its transaction rolls
    # back, and the next run imports the file whole.
    watch = tmp_path / "watch"
    watch.mkdir()
    _big_export(watch / "export.xml", 150_000)
    cfg = write_config(
        tmp_path / "c.toml",
        tmp_path / "data",
        apple=f'[sources.apple_health]\nenabled = true\nwatch_dir = "{watch}"',
    )
    with cli_process(cfg, "run") as proc:
        wait_until(wal_bigger_than(tmp_path / "data"), proc, timeout=120)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, output
    assert "stopping after the current cycle" in output
    assert "cycle stopped at a step boundary" in output or "reached no step boundary" in output
    db = sqlite3.connect(tmp_path / "data" / "rhythm-bridge.db")
    assert db.execute("SELECT count(*) FROM readings").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM imported_files").fetchone()[0] == 0
    assert (
        db.execute("SELECT status FROM sync_state WHERE source='apple_health'").fetchone() is None
    )
    db.close()
    with cli_process(cfg, "run", "--once") as again:
        again.communicate(timeout=300)
    assert again.returncode == 0
    db = sqlite3.connect(tmp_path / "data" / "rhythm-bridge.db")
    assert db.execute("SELECT count(*) FROM readings").fetchone()[0] == 150_000
    state = db.execute("SELECT status FROM sync_state WHERE source='apple_health'").fetchone()
    assert state[0] == "ok"
    db.close()


def _calendar_sync(tmp_path, fake, monkeypatch):
    """A config syncing only Google Calendar "primary" from the fake, with a stored token."""
    from bridge.auth.secrets import KEY_ENV, Secrets
    from bridge.config import load_settings
    from connectors.google_calendar import TOKEN_SECRET

    google = fake.settings()["google_calendar"]
    cfg = write_config(
        tmp_path / "c.toml",
        tmp_path / "data",
        secrets='[secrets]\nbackend = "file"',
        google=(
            '[sources.google_calendar]\nenabled = true\ncalendars = ["primary"]\n'
            f'api_base_url = "{google["api_base_url"]}"\ntoken_url = "{google["token_url"]}"'
        ),
    )
    monkeypatch.setenv(KEY_ENV, "fault-test-keyring-key")  # the subprocesses inherit it
    settings = load_settings(cfg)
    Secrets.from_settings(settings).set_json(
        TOKEN_SECRET,
        {
            "token": "stale-access-token",
            "refresh_token": "google-refresh-token",
            "client_id": "1234-abc.apps.googleusercontent.com",
            "client_secret": "google-client-secret",
            "scopes": ["https://www.googleapis.com/auth/calendar.readonly"],
            "expiry": "2026-01-01T00:00:00.000000Z",
        },
    )
    return cfg, settings


def _calendar_rows(settings) -> tuple[int, int]:
    """(events stored, Google sync-token rows stored)."""
    from bridge.store import Store
    from bridge.store.models import CalendarEvent, SyncState

    store = Store(settings.database_url)
    try:
        with store.session() as session:
            tokens = session.exec(
                select(SyncState).where(
                    SyncState.source == "google_calendar", SyncState.stream == "events"
                )
            ).all()
        return store.count(CalendarEvent), len(tokens)
    finally:
        store.dispose()


@pytest.mark.parametrize(
    "moment",
    [
        "pull",  # the 4th page is being fetched: nothing has been written yet
        pytest.param("commit", marks=pytest.mark.sqlite_only),  # the write is half-way
    ],
)
def test_sigkill_in_the_middle_of_a_calendar_sync_then_restart(tmp_path, monkeypatch, moment):
    from tests.fake_apis import FakeAPIs, World

    # "commit" needs a write big enough to catch mid-way (~9k events); "pull" a few pages.
    # A frozen clock: the world does not change between the runs (unlike the soak's).
    frozen = datetime.now(UTC).replace(microsecond=0)
    world = World(bulk=200 if moment == "commit" else 20)
    with FakeAPIs(now=frozen, world=world) as fake:
        cfg, settings = _calendar_sync(tmp_path, fake, monkeypatch)
        args = ("sync", "google_calendar")
        with cli_process(cfg, *args, quiet=True) as proc:
            if moment == "pull":
                reached, release = threading.Event(), threading.Event()
                fake.hold = ("pageToken=300%40", reached, release)
                wait_until(reached.is_set, proc, timeout=120)
            else:
                wait_until(wal_bigger_than(tmp_path / "data", 1_000_000), proc, timeout=300)
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            if moment == "pull":
                release.set()
                fake.hold = None
        assert _calendar_rows(settings) == (0, 0), "a killed sync must leave nothing behind"

        with cli_process(cfg, *args) as proc:
            output, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, output
        records, new = (int(n) for n in re.findall(r"ok, (\d+) records, (\d+) new", output)[0])
        assert records == new > 0
        assert _calendar_rows(settings) == (new, 1)

        # The next sync is incremental from the stored token: nothing new, nothing doubled.
        with cli_process(cfg, *args) as proc:
            output, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, output
        assert "0 new" in output
        assert _calendar_rows(settings) == (new, 1)
