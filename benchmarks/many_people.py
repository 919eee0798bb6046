"""Many people on PostgreSQL workers: what `rhythm-bridge worker` holds to under load.

    .venv/bin/python benchmarks/many_people.py --people N --workers W [--json]
        [--seconds S] [--day-seconds D] [--concurrency C]

Starts, all on 127.0.0.1 and all ended by PID at the end (or on Ctrl-C):
- a throwaway PostgreSQL server (Debian's, as .ci/with-postgres; a temp data dir);
- a fake WHOOP for N accounts of one client application (tests/daemon/fake_whoop_many.py):
  rotating refresh tokens that work once, WHOOP's per-application windows (100 requests a
  minute, 10,000 a day) on a compressed clock where a day lasts D seconds, a 429 with
  Retry-After past any window;
- W `rhythm-bridge worker` processes (the real command) for N people, each with WHOOP
  (the real connector, keyring, store writes).

After a third of the run one worker is killed with SIGKILL (while it pulls: the queue is
never empty at this load) and started again. At the end the workers get SIGTERM and finish
what they run. Reported, from the fake's and the database's records:
- overlapping_syncs: two pulls of one account at once (procrastinate's job events), and
  refresh_token_reuse (a refresh token used twice: what an overlap would cause);
- window_violations: requests the fake had to refuse because a window was full;
- rows_lost / rows_duplicated: the readings the fake's served records convert to, against
  the stored ones, per person;
- synced_share: accounts with a successful pull within their polling period at the end;
  age_p50/p95_minutes: the age of each person's last successful pull in simulated minutes;
- jobs/s, CPU and RSS per worker.

Only WHOOP is in this load: Google Calendar's and Garmin's fakes serve one account
(tests/fake_apis.py) and are not part of it. Cycles are not queued here (cycle_cron is
set to never): this measures the syncs. Figures only, no assertions; run it on a quiet
machine and say when it was not.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NEVER = "0 0 1 1 *"
KEY = "many-people-benchmark-key"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Postgres:
    """A throwaway server on 127.0.0.1 (as root: run as the postgres user)."""

    def __init__(self, workdir: Path) -> None:
        bins = sorted(Path("/usr/lib/postgresql").glob("*/bin"))
        if not bins:
            raise SystemExit("PostgreSQL is not installed (Debian: apt-get install postgresql)")
        self.bin = bins[-1]
        self.data = workdir / "pg"
        self.data.mkdir()
        self.port = free_port()
        self.root = os.getuid() == 0
        if self.root:
            shutil.chown(self.data, "postgres")
            shutil.chown(workdir, "postgres")

    def _run(self, *args: str) -> None:
        cmd = [str(self.bin / args[0]), *args[1:]]
        if self.root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)

    def start(self) -> str:
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres")
        opts = (
            f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c max_connections=200 -c synchronous_commit=off"
        )
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.data / "log"), "-w", "-o", opts, "start"
        )
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def pid(self) -> int | None:
        with contextlib.suppress(OSError, ValueError):
            return int((self.data / "postmaster.pid").read_text().split()[0])
        return None

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, FileNotFoundError):
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        pid = self.pid()
        if pid:  # pg_ctl failed: end the postmaster by its PID
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def config_text(url: str, data: Path, fake: str, people: list[str], args: Any) -> str:
    scale = 86_400.0 / args.day_seconds
    lines = [
        'timezone = "UTC"',
        f'data_dir = "{data}"',
        "[database]",
        f'url = "{url}"',
        "[secrets]",
        'backend = "file"',
        "[workers]",
        f"concurrency = {args.concurrency}",
        f"limits = {{ whoop = [[100, {60.0 / scale:.4f}], [10000, {86_400.0 / scale:.3f}]] }}",
        'schedule_cron = "* * * * * */5"',
        f'cycle_cron = "{NEVER}"',
        "stalled_after_seconds = 10.0",
        'stalled_cron = "* * * * * */5"',
        "budget_wait_seconds = 2.0",
    ]
    whoop = (
        f'enabled = true\nclient_id = "bench"\ninterval_minutes = 1\nrefetch_days = 3\n'
        f'api_base_url = "{fake}/whoop/developer"\ntoken_url = "{fake}/whoop/token"'
    )
    for p in people:
        lines += [f"[people.{p}.sources.whoop]", whoop]
    return "\n".join(lines) + "\n"


def write_tokens(data: Path, people: list[str]) -> None:
    """Every person's first token pair and the app's client secret, in one write."""
    from bridge.auth.secrets import FILE_NAME, EncryptedFileKeyring, service_of

    ring = EncryptedFileKeyring(data / FILE_NAME, key=KEY)
    doc: dict[str, dict[str, str]] = {}
    for p in people:
        token = {"access_token": "", "refresh_token": f"{p}:0", "expires_at": 0, "scope": ""}
        doc[service_of(p)] = {
            "whoop:token": json.dumps(token, sort_keys=True),
            "whoop:client_secret": "bench-secret",
            "_names": json.dumps(["whoop:client_secret", "whoop:token"]),
        }
    ring._save(doc)


class Sampler(threading.Thread):
    """CPU seconds and RSS of each worker PID, from /proc, every second."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.pids: dict[int, str] = {}
        self.rss: dict[int, float] = {}
        self.cpu: dict[int, float] = {}
        self.stop_event = threading.Event()

    def run(self) -> None:
        tick = os.sysconf("SC_CLK_TCK")
        while not self.stop_event.wait(1.0):
            for pid in list(self.pids):
                with contextlib.suppress(OSError, ValueError, IndexError):
                    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    self.cpu[pid] = (int(stat[11]) + int(stat[12])) / tick
                    rss = int(stat[21]) * os.sysconf("SC_PAGE_SIZE") / 2**20
                    self.rss[pid] = max(self.rss.get(pid, 0.0), rss)


def start_worker(env: dict[str, str], config: Path, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "bridge.cli.main", "--config", str(config), "worker"]
    return subprocess.Popen(
        cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log.open("ab")
    )


def overlaps(conn: Any) -> int:
    """Pulls of one account that ran at once: each job's started -> next event spans,
    per lock."""
    rows = conn.execute(
        "SELECT j.lock, e.job_id, e.type::text, e.at FROM procrastinate_events e "
        "JOIN procrastinate_jobs j ON j.id = e.job_id WHERE j.task_name = 'rb.sync' "
        "ORDER BY e.job_id, e.at, e.id"
    ).fetchall()
    spans: dict[str, list[tuple[datetime, datetime]]] = {}
    open_: dict[int, tuple[str, datetime]] = {}
    for lock, job, kind, at in rows:
        if kind == "started":
            open_[job] = (lock, at)
        elif job in open_ and kind in ("succeeded", "failed", "deferred_for_retry", "aborted"):
            lk, began = open_.pop(job)
            spans.setdefault(lk, []).append((began, at))
    found = 0
    for items in spans.values():
        items.sort()
        found += sum(1 for a, b in itertools.pairwise(items) if b[0] < a[1])
    return found


def truth_check(conn: Any, served: dict[str, list[str]], people: list[str]) -> tuple[int, int, int]:
    """(lost, duplicated): the readings the served records convert to, against the store."""
    from connectors import whoop
    from connectors.base import ReadingRecord
    from connectors.live import normalize

    expected: set[tuple] = set()
    for person, items in served.items():
        raws: dict[str, list[dict]] = {}
        for item in items:
            stream, raw = json.loads(item)
            raws.setdefault(stream, []).append(raw)
        wake = {str(r["id"]): whoop._span(r)[1] for r in raws.get("sleep", [])}
        recovery = partial(whoop.recovery_records, wake_times=wake)
        for stream, convert in (
            ("cycle", whoop.cycle_records),
            ("sleep", whoop.sleep_records),
            ("recovery", recovery),
        ):
            for rec in normalize("whoop", stream, raws.get(stream, []), convert):
                if isinstance(rec, ReadingRecord):
                    row = rec.row("whoop", datetime.now(UTC))
                    expected.add(
                        (person, row["metric"], row["origin"], row["start_utc"], row["label"])
                    )
    stored = conn.execute(
        "SELECT person, metric, origin, start_utc, label FROM readings WHERE person = ANY(%s) "
        "AND source = 'whoop'",
        (people,),
    ).fetchall()
    have = [(p, m, o, s.astimezone(UTC), lab) for p, m, o, s, lab in stored]
    got = set(have)
    lost = len(expected - got)
    duplicated = (len(have) - len(got)) + len(got - expected)
    return lost, duplicated, len(expected)


def run(args: Any) -> dict[str, Any]:
    from sqlalchemy.engine import make_url

    work = Path(tempfile.mkdtemp(prefix="rb-many-"))
    os.chmod(work, 0o755)
    pg = Postgres(work)
    fake_proc: subprocess.Popen | None = None
    workers: list[subprocess.Popen] = []
    sampler = Sampler()
    try:
        url = pg.start()
        # Its own config only: a RHYTHM_BRIDGE_* variable around it must not redirect it.
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("RHYTHM_BRIDGE_")},
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "RHYTHM_BRIDGE_KEYRING_KEY": KEY,
        }
        fake_proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.daemon.fake_whoop_many",
                "--day-seconds",
                str(args.day_seconds),
            ],
            env=env,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        fake = f"http://127.0.0.1:{fake_proc.stdout.readline().split()[1]}"  # type: ignore[union-attr]
        data = work / "data"
        data.mkdir(mode=0o700)
        people = [f"p{i:04d}" for i in range(args.people)]
        config = work / "config.toml"
        config.write_text(config_text(url, data, fake, people, args))

        from bridge.config import load_settings
        from bridge.daemon.workers import poll_interval
        from bridge.store import Store

        settings = load_settings(config, environ={})
        store = Store(url)
        for p in people:
            store.add_person(p)
        store.dispose()
        write_tokens(data, people)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "bridge.cli.main",
                "--config",
                str(config),
                "worker",
                "--apply-schema",
            ],
            env=env,
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        period = poll_interval(settings.for_person(people[0]), "whoop", args.people).total_seconds()
        logs: list[Path] = []

        def launch() -> subprocess.Popen:
            logs.append(work / f"worker-{len(logs)}.log")
            proc = start_worker(env, config, logs[-1])
            sampler.pids[proc.pid] = logs[-1].stem
            return proc

        started = time.time()
        workers.extend(launch() for _ in range(args.workers))
        sampler.start()

        import psycopg

        libpq = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        kill_at = started + args.seconds / 3
        killed: dict[str, Any] = {"pid": None, "jobs_running": 0}
        while time.time() < started + args.seconds:
            if killed["pid"] is not None or time.time() < kill_at:
                time.sleep(0.5)
                continue
            # Kill a worker while it pulls: the one whose log started a sync still running.
            with psycopg.connect(libpq) as conn:
                doing = [
                    row[0]
                    for row in conn.execute(
                        "SELECT id FROM procrastinate_jobs WHERE status = 'doing' "
                        "AND task_name = 'rb.sync'"
                    )
                ]
            for i, proc in enumerate(workers):
                text = logs[i].read_text(errors="replace") if logs[i].exists() else ""
                mine = [j for j in doing if f"Starting job rb.sync[{j}]" in text]
                if mine:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
                    killed = {"pid": proc.pid, "jobs_running": len(mine)}
                    log_of_new = launch()
                    logs.insert(i, logs.pop())  # the restarted worker's log takes its place
                    workers[i] = log_of_new
                    break
            else:
                time.sleep(0.05)
        ended = time.time()
        for proc in workers:
            proc.send_signal(signal.SIGTERM)
        for proc in workers:
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        sampler.stop_event.set()
        wall = time.time() - started
        taken_over = sum(
            p.read_text(errors="replace").count("of a dead worker is taken over")
            for p in work.glob("worker-*.log")
        )

        import urllib.request

        with urllib.request.urlopen(urllib.request.Request(fake + "/_truth", data=b"")) as resp:
            truth = json.load(resp)
        with psycopg.connect(libpq) as conn:
            overlapping = overlaps(conn)
            lost, duplicated, expected = truth_check(conn, truth["served"], people)
            rows = conn.execute(
                "SELECT person, last_success_at FROM sync_state WHERE person = ANY(%s) "
                "AND source = 'whoop' AND stream = ''",
                (people,),
            ).fetchall()
            jobs = conn.execute(
                "SELECT status::text, count(*) FROM procrastinate_jobs WHERE task_name = 'rb.sync' "
                "GROUP BY 1"
            ).fetchall()
        last = {p: at for p, at in rows if at is not None}
        scale = 86_400.0 / args.day_seconds
        ages = sorted((ended - last[p].timestamp()) if p in last else wall for p in people)
        synced = sum(1 for p in people if p in last and ended - last[p].timestamp() <= period)
        counts = dict(jobs)
        cpu = {pid: secs for pid, secs in sampler.cpu.items()}

        def pct(q: float) -> float:
            return ages[min(len(ages) - 1, int(q * len(ages)))]

        return {
            "people": args.people,
            "workers": args.workers,
            "concurrency": args.concurrency,
            "seconds": round(wall, 1),
            "day_seconds": args.day_seconds,
            "period_seconds": round(period, 1),
            "period_simulated_hours": round(period * scale / 3600, 2),
            "overlapping_syncs": overlapping,
            "refresh_token_reuse": truth["counts"].get("refresh_token_reuse", 0),
            "window_violations": truth["counts"].get("window_violations", 0),
            "requests": truth["counts"].get("requests", 0),
            "rows_lost": lost,
            "rows_duplicated": duplicated,
            "rows_expected": expected,
            "rows_stored_people": len(last),
            "synced_share": round(synced / args.people, 4),
            "never_synced": sum(1 for p in people if p not in last),
            "age_p50_minutes": round(statistics.median(ages) * scale / 60, 1),
            "age_p95_minutes": round(pct(0.95) * scale / 60, 1),
            "age_p95_seconds_real": round(pct(0.95), 1),
            "age_p95_of_period": round(pct(0.95) / period, 3),
            "jobs": counts,
            "jobs_per_second": round(counts.get("succeeded", 0) / wall, 2),
            "killed_worker_pid": killed["pid"],
            "sync_jobs_running_at_kill": killed["jobs_running"],
            "jobs_taken_over": taken_over,
            "worker_cpu_seconds": {str(k): round(v, 1) for k, v in cpu.items()},
            "worker_cpu_share": {str(k): round(v / wall, 3) for k, v in cpu.items()},
            "worker_rss_mb": {str(k): round(v, 1) for k, v in sampler.rss.items()},
            "worker_rss_mb_max": round(max(sampler.rss.values(), default=0.0), 1),
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        }
    finally:
        sampler.stop_event.set()
        for proc in workers:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if fake_proc is not None:
            with contextlib.suppress(Exception):
                fake_proc.stdin.close()  # type: ignore[union-attr]
            try:
                fake_proc.wait(10)
            except subprocess.TimeoutExpired:
                fake_proc.kill()
                fake_proc.wait()
        pg.stop()
        with contextlib.suppress(OSError):
            keep = Path(tempfile.gettempdir()) / "rb-many-workers.log"
            keep.write_text(
                "".join(p.read_text(errors="replace") for p in sorted(work.glob("worker-*.log")))
            )
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument(
        "--day-seconds", type=float, default=300.0, help="a simulated day lasts this long"
    )
    parser.add_argument("--concurrency", type=int, default=4, help="jobs at once per worker")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args)
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key:>28}: {value}")


if __name__ == "__main__":
    main()
