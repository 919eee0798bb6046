"""`rhythm-bridge worker`: many people's syncs as procrastinate jobs on PostgreSQL.

Against a real PostgreSQL server only (`make test-postgres`); the WHOOP pull is scripted
(tests/daemon/worker_child.py), everything after it is the real worker.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bridge.config import Settings
from bridge.intake.sources import get_state
from bridge.store import Store
from bridge.store.models import Reading, SyncState
from tests.conftest import PG_ADMIN_URL, ROOT
from tests.daemon import worker_child

if not PG_ADMIN_URL:
    pytest.skip(
        "the worker tests need PostgreSQL: run them with `make test-postgres` "
        "(.ci/with-postgres sets RB_TEST_DATABASE_URL)",
        allow_module_level=True,
    )
procrastinate = pytest.importorskip(
    "procrastinate", reason="the workers extra is not installed (pip install -e '.[workers]')"
)
pytest.importorskip("pyrate_limiter", reason="the workers extra is not installed")

# Far in the past: no cycle or refit job is queued while these tests run.
NEVER = "0 0 1 1 *"


def child_env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def worker_settings(database_url: str, tmp_path: Path, people: list[str], **workers: Any) -> dict:
    whoop = {"enabled": True, "client_id": "c", "interval_minutes": 60}
    return {
        "timezone": "Europe/Berlin",
        "data_dir": str(tmp_path / "data"),
        "database": {"url": database_url},
        "secrets": {"backend": "file"},
        "people": {p: {"sources": {"whoop": whoop}} for p in people},
        "workers": {
            "cycle_cron": NEVER,
            "stalled_after_seconds": 5,
            "stalled_cron": "* * * * * */2",
            "schedule_cron": NEVER,
            **workers,
        },
    }


@pytest.fixture
def household(database_url: str, tmp_path: Path) -> tuple[dict, Settings, Store]:
    from bridge.daemon.workers import apply_schema

    doc = worker_settings(database_url, tmp_path, ["ana", "ben"])
    settings = Settings.model_validate(doc)
    store = Store(database_url)
    for person in ("ana", "ben"):
        store.add_person(person)
    apply_schema(settings)
    yield doc, settings, store
    store.dispose()


def jobs(database_url: str) -> list[dict[str, Any]]:
    import psycopg

    from bridge.daemon.workers import needs_postgres

    url = needs_postgres(Settings.model_validate({"database": {"url": database_url}}))
    with psycopg.connect(url) as conn:
        cur = conn.execute(
            "SELECT id, task_name, status, lock, args, scheduled_at, attempts "
            "FROM procrastinate_jobs WHERE task_name = 'rb.sync' ORDER BY id"
        )
        names = [c.name for c in cur.description or []]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def defer_sync(settings: Settings, person: str, *, lock: str | None = None) -> None:
    from bridge.daemon.workers import make_app

    app = make_app(settings)
    key = lock or f"sync:{person}:whoop"
    with app.open():
        app.rb_sync.configure(lock=key).defer(person=person, source="whoop")


def drain(settings: Settings, store: Store, concurrency: int = 1) -> None:
    """Run a worker in this process until the queue is empty."""
    from bridge.daemon.workers import run_worker

    run_worker(settings, store, concurrency=concurrency, wait=False)


def readings(store: Store, person: str) -> int:
    return store.as_person(person).count(Reading)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    def plan(**doc: Any) -> Path:
        log = tmp_path / "pulls.jsonl"
        monkeypatch.setenv("RB_FAKE_PULL", json.dumps({"log": str(log), **doc}))
        return log

    import connectors.whoop

    monkeypatch.setattr(connectors.whoop, "pull", worker_child.fake_pull)
    return plan


def spans(log: Path) -> list[tuple[str, float, float]]:
    starts: dict[tuple[str, int], list[float]] = {}
    out = []
    for line in log.read_text().splitlines():
        doc = json.loads(line)
        key = (doc["person"], doc["pid"])
        if "start" in doc:
            starts.setdefault(key, []).append(doc["start"])
        else:
            out.append((doc["person"], starts[key].pop(0), doc["end"]))
    return out


def test_worker_refuses_sqlite(tmp_path: Path) -> None:
    from bridge.daemon.workers import needs_postgres
    from bridge.errors import ConfigError

    settings = Settings.model_validate({"data_dir": str(tmp_path)})
    with pytest.raises(ConfigError, match="needs \\[database\\] url on PostgreSQL"):
        needs_postgres(settings)


def test_two_workers_racing_for_one_account_never_overlap(household, scripted) -> None:
    """Two workers (two apps, two connection pools, as two machines would have) each with
    room for three jobs; six syncs of ana's account and three of ben's are queued. Ana's
    pulls never overlap; ben's run beside hers."""
    from bridge.daemon.workers import make_app, run_worker

    _doc, settings, store = household
    log = scripted(sleep=0.3)
    app = make_app(settings)
    with app.open():
        for _ in range(6):
            app.rb_sync.configure(lock="sync:ana:whoop").defer(person="ana", source="whoop")
        for _ in range(3):
            app.rb_sync.configure(lock="sync:ben:whoop").defer(person="ben", source="whoop")
    errors: list[BaseException] = []

    def one() -> None:
        # A worker that finds nothing it may take (the rest is locked) stops: start it
        # again until every job is done.
        deadline = time.monotonic() + 60
        try:
            while time.monotonic() < deadline and any(
                j["status"] != "succeeded" for j in jobs(settings.database_url)
            ):
                run_worker(settings, store, concurrency=3, wait=False)
        except BaseException as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    pulls = spans(log)
    ana = sorted((s, e) for p, s, e in pulls if p == "ana")
    ben = [(s, e) for p, s, e in pulls if p == "ben"]
    assert len(ana) == 6 and len(ben) == 3
    assert all(b[0] >= a[1] for a, b in itertools.pairwise(ana)), ana
    # The lock is per account, not global: ben's pulls ran while ana's did.
    assert any(bs < ae and as_ < be for bs, be in ben for as_, ae in ana)
    assert {j["status"] for j in jobs(settings.database_url)} <= {"succeeded"}
    assert readings(store, "ana") == worker_child.READINGS


def test_a_worker_killed_mid_sync_is_taken_over(household, scripted, tmp_path: Path) -> None:
    """SIGKILL a worker while it pulls; another takes the job over once the dead one's
    heartbeat is stale, and the account's rows are there once, none lost or doubled."""
    doc, settings, store = household
    log = scripted(sleep=4)
    defer_sync(settings, "ana")
    env = child_env()
    cmd = [sys.executable, "-m", "tests.daemon.worker_child", json.dumps(doc)]
    first = subprocess.Popen(cmd, env=env, cwd=ROOT)
    second = None
    try:
        deadline = time.monotonic() + 60
        while not (log.exists() and log.read_text()):
            assert first.poll() is None, "the first worker died before pulling"
            assert time.monotonic() < deadline, "the first worker never started the pull"
            time.sleep(0.1)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        assert readings(store, "ana") == 0  # the pull's transaction never committed
        second = subprocess.Popen(cmd, env=env, cwd=ROOT)
        deadline = time.monotonic() + 90
        while [j["status"] for j in jobs(settings.database_url)] != ["succeeded"]:
            assert time.monotonic() < deadline, jobs(settings.database_url)
            time.sleep(0.5)
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(30)
    assert readings(store, "ana") == worker_child.READINGS
    state = get_state(store.as_person("ana"), "whoop")
    assert state is not None and state.status == "ok"
    assert len(spans(log)) == 1  # the killed pull never ended; the second one did


def test_a_person_removed_while_their_job_waits(household, scripted) -> None:
    _doc, settings, store = household
    scripted()
    defer_sync(settings, "ben")
    store.remove_person("ben")
    drain(settings, store)
    assert [j["status"] for j in jobs(settings.database_url)] == ["succeeded"]
    assert readings(store, "ben") == 0
    assert store.as_person("ben").count(SyncState) == 0


def test_one_revoked_token_leaves_the_other_persons_data_alone(household, scripted) -> None:
    _doc, settings, store = household
    scripted()
    defer_sync(settings, "ana")
    defer_sync(settings, "ben")
    drain(settings, store, concurrency=2)
    scripted(revoked=["ben"])
    defer_sync(settings, "ana")
    defer_sync(settings, "ben")
    drain(settings, store, concurrency=2)
    assert readings(store, "ana") == readings(store, "ben") == worker_child.READINGS
    ana, ben = (
        get_state(store.as_person("ana"), "whoop"),
        get_state(store.as_person("ben"), "whoop"),
    )
    assert ana is not None and ana.status == "ok" and ana.last_error is None
    assert ben is not None and ben.status == "reauth_required"
    assert "invalid_grant" in (ben.last_error or "")


def test_a_429_is_retried_after_its_retry_after(household, scripted, tmp_path: Path) -> None:
    _doc, settings, store = household
    scripted(rate_limit_once={"ana": 120}, marks=str(tmp_path))
    before = datetime.now(UTC)
    defer_sync(settings, "ana")
    drain(settings, store)
    (job,) = jobs(settings.database_url)
    assert job["status"] == "todo" and job["attempts"] == 1
    wait = (job["scheduled_at"] - before).total_seconds()
    assert 119 <= wait <= 150, wait
    assert readings(store, "ana") == 0
    # Waited out (moved to now rather than sleeping two minutes), it succeeds.
    import psycopg

    from bridge.daemon.workers import needs_postgres

    with psycopg.connect(needs_postgres(settings)) as conn:
        conn.execute(
            "UPDATE procrastinate_jobs SET scheduled_at = now() WHERE id = %s", (job["id"],)
        )
    drain(settings, store)
    assert [j["status"] for j in jobs(settings.database_url)] == ["succeeded"]
    assert readings(store, "ana") == worker_child.READINGS


def test_queued_once_per_account_and_due_by_quota(household) -> None:
    """The scheduler queues each due account once, however often it runs, and stretches
    the interval to what the daily quota allows for this many people."""
    from bridge.daemon import workers

    _doc, settings, store = household
    workers.set_context(settings, store)
    now = datetime.now(UTC)
    assert sorted(workers.due_syncs(now)) == [("ana", "whoop"), ("ben", "whoop")]
    for _ in range(2):
        for person, _source in workers.due_syncs(now):
            with contextlib.suppress(procrastinate.exceptions.AlreadyEnqueued):
                defer_sync_once(settings, person)
    assert len(jobs(settings.database_url)) == 2
    assert workers.poll_interval(settings, "whoop", 2) == timedelta(minutes=60)
    assert workers.poll_interval(settings, "whoop", 1000) == timedelta(hours=15)


def defer_sync_once(settings: Settings, person: str) -> None:
    from bridge.daemon.workers import make_app

    app = make_app(settings)
    key = f"sync:{person}:whoop"
    with app.open():
        app.rb_sync.configure(lock=key, queueing_lock=key).defer(person=person, source="whoop")


BUDGET_CHILD = """
import json, sys, time
from bridge.config import Settings
from bridge.daemon.workers import SharedBudget, needs_postgres
from bridge.errors import RateLimited
settings = Settings.model_validate(json.loads(sys.argv[1]))
budget = SharedBudget(needs_postgres(settings), settings)
stamps = []
end = time.time() + float(sys.argv[2])
while time.time() < end:
    try:
        budget("whoop")
    except RateLimited:
        continue
    stamps.append(time.time())
budget.close()
print(json.dumps(stamps))
"""


def test_the_budget_is_shared_across_processes(database_url: str, tmp_path: Path) -> None:
    """Two processes spending one provider's budget as fast as they can: together they
    never exceed any window, and both get requests through."""
    doc = worker_settings(
        database_url,
        tmp_path,
        [],
        limits={"whoop": [[10, 1.0], [25, 3.0]]},
        budget_wait_seconds=0.5,
    )
    env = child_env()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", BUDGET_CHILD, json.dumps(doc), "4"],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    each = [json.loads(o) for o in outs]
    assert all(each), "both processes got requests through"
    stamps = sorted(t for one in each for t in one)
    for limit, window in ((10, 1.0), (25, 3.0)):
        # Every request and the ones within the window before it: never more than allowed
        # (a small tolerance for the clocks of the database and the processes).
        worst = max(sum(1 for u in stamps if t - window + 0.05 < u <= t) for t in stamps)
        assert worst <= limit, (limit, window, worst)
