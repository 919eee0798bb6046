"""Soak: the daemon for 30 simulated days against local fakes of every provider.

    .venv/bin/python benchmarks/soak.py [--days 30] [--no-faults] [--keep DIR]
                                        [--meters-in-process] [--trace-memory]

The daemon runs its meter step in a child process (bridge/cycle/meters_apart.py);
`--meters-in-process` runs it in the daemon's own process as before, the baseline for
the RSS growth.

The daemon's own scheduler (`bridge.daemon.scheduler.build_scheduler`: the 15-minute cycle and the
hourly adapter job) runs in this process under an accelerated clock (time-machine): after
each job the clock jumps to the next job's time. Every connector points at
`tests/fake_apis.py` on 127.0.0.1 in a child process (so its memory is not ours), whose
world moves with the same clock: Google Calendar (two calendars, sync tokens refused once
a week), WHOOP (rotating refresh tokens, pending scores), Garmin (the Personal API), an
.ics feed; a cumulative Apple Health export lands in the watched folder every week and a
FIT file in Garmin's. With faults on (the default) every 53rd API request answers 503,
every 89th 429, every 131st drops the connection, and all of them fail for three hours on
day 12. A simulated person answers about half the recommendations.

Reported: cycles run, records stored, duplicates (must be 0), a comparison with a fresh
full pull of every source at the end (missing / extra / changed must be 0), RSS after the
first day and at the end (growth <= 20 MB), errors, and cycle time on the first day vs
the last (the same-run baseline: a daemon slowing down as data accumulates shows here).
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import time_machine
from sqlalchemy import func, select

from bridge.auth.secrets import FILE_NAME, KEY_ENV, Secrets
from bridge.config import Settings
from bridge.store import Store
from bridge.store.models import CalendarEvent, Reading, Recommendation
from tests.shared import SHARED_FIXTURES, missing_reason

if not SHARED_FIXTURES.is_dir():  # the fakes answer with real recorded bodies kept there
    raise SystemExit(f"soak: {missing_reason(SHARED_FIXTURES)}")

from tests.fake_apis import BERLIN, provider_settings

ROOT = Path(__file__).resolve().parent.parent
START = datetime(2026, 10, 12, 6, 0, tzinfo=BERLIN)  # the 30 days cross the DST change
# A real run, read from ../shared/ (never committed here).
FIT = SHARED_FIXTURES / "garmin" / "fit" / "garmin-fenix-5-run.fit"
MB = 2**20


def rss() -> dict[str, int]:
    """This process's resident set size in bytes: VmRSS = RssAnon + RssFile + RssShmem."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
            out[key] = int(value.split()[0]) * 1024
    return out


class LogCounter(logging.Handler):
    """Counts what the daemon logs: sync outcomes per source, warnings and errors."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.syncs: Counter[tuple[str, str]] = Counter()
        self.levels: Counter[str] = Counter()
        self.messages: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("sync source="):
            source, status = record.args[:2]  # type: ignore[index]
            self.syncs[source, status] += 1
        if record.levelno >= logging.WARNING:
            self.levels[record.levelname] += 1
            # Group by the message before its details (ids and counts vary).
            self.messages[f"{record.name}: {str(record.msg)[:70]}"] += 1


class Fakes:
    """tests/fake_apis.py in a child process; its clock follows ours."""

    def __init__(self, faults: bool, outage: tuple[datetime, datetime]) -> None:
        args = [sys.executable, "-m", "tests.fake_apis", "--now", START.isoformat()]
        args += ["--outage", *(t.isoformat() for t in outage)]
        args += ["--faults"] if faults else []
        self.proc = subprocess.Popen(
            args, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("port "):
            raise SystemExit(f"the fake APIs did not start: {line!r}")
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"
        self.client = httpx.Client(timeout=30)

    def set_clock(self, now: datetime, **extra: Any) -> None:
        self.client.post(self.url + "/_clock", json={"now": now.isoformat(), **extra})

    def stats(self) -> dict[str, Any]:
        return self.client.get(self.url + "/_stats").json()

    def stop(self) -> None:
        self.client.close()
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(30)


def make_settings(data: Path, fakes_url: str, **extra: Any) -> Settings:
    sources = provider_settings(fakes_url)
    sources["apple_health"] = {"enabled": True, "watch_dir": str(data.parent / "apple-drop")}
    sources["garmin"]["export_dir"] = str(data.parent / "garmin-drop")
    return Settings.model_validate(
        {
            "timezone": "Europe/Berlin",
            "data_dir": str(data),
            "secrets": {"backend": "file"},
            "sources": sources,
            **extra,
        }
    )


def store_credentials(settings: Settings) -> None:
    """What `rhythm-bridge auth ...` leaves in the keyring; every access token is stale."""
    from connectors import garmin, google_calendar, whoop

    secrets = Secrets.from_settings(settings)
    secrets.set_json(
        google_calendar.TOKEN_SECRET,
        {
            "token": "stale",
            "refresh_token": "google-refresh",
            "client_id": "1234-soak.apps.googleusercontent.com",
            "client_secret": "google-client-secret",
            "scopes": list(google_calendar.SCOPES),
            "expiry": "2026-01-01T00:00:00.000000Z",
        },
    )
    secrets.set(whoop.CLIENT_SECRET, "whoop-client-secret")
    secrets.set_json(
        whoop.TOKEN_SECRET,
        {"access_token": "stale", "refresh_token": "whoop-refresh-0", "expires_at": 0},
    )
    secrets.set(garmin.KEY_SECRET, "garmin-personal-api-key")


def drop_files(settings: Settings, day: int) -> None:
    """The person's manual exports: a cumulative Apple Health export weekly, a FIT file once."""
    if day % 7 == 0:
        folder = Path(settings.sources.apple_health.watch_dir)
        tmp = folder.parent / f"export-day{day}.zip"
        first = START.date() - timedelta(days=14)
        # In another process: the phone makes the export, not the daemon.
        make = (
            "from benchmarks.gen_apple_export import generate; "
            f"generate(Path({str(tmp)!r}), days={14 + day}, start={str(first)!r}, "
            "tz='+0100', seed=3)"
        )
        subprocess.run(
            [sys.executable, "-c", "from pathlib import Path; " + make], cwd=ROOT, check=True
        )
        tmp.with_suffix(".truth.json").unlink()
        tmp.rename(folder / tmp.name)  # whole, like a finished copy
    if day == 3:
        folder = Path(settings.sources.garmin.export_dir)
        shutil.copy(FIT, folder / FIT.name)


def answer_latest(store: Store, rng: random.Random, answered: set[int]) -> None:
    """A person who answers about half the recommendations, some of them late."""
    from bridge.learning.feedback import record_feedback

    with store.session() as session:
        rec_id = session.execute(select(func.max(Recommendation.id))).scalar()
    if rec_id is None or rec_id in answered:
        return
    answered.add(rec_id)
    if rng.random() < 0.5:
        record_feedback(store, rec_id, rng.choice(("accept", "accept", "ignore", "reschedule")))


def identities(store: Store) -> dict[str, Any]:
    """Duplicates by identity, and every live row's content for the final comparison."""
    r, e = Reading, CalendarEvent
    reading_id = (r.source, r.metric, r.origin, r.label, r.start_utc)
    event_id = (e.source, e.calendar_id, e.uid, e.recurrence_id)
    with store.session() as session:
        dup_readings = session.execute(
            select(func.count()).select_from(
                select(*reading_id).group_by(*reading_id).having(func.count() > 1).subquery()
            )
        ).scalar()
        dup_events = session.execute(
            select(func.count()).select_from(
                select(*event_id).group_by(*event_id).having(func.count() > 1).subquery()
            )
        ).scalar()
        readings = {
            (*row[:5], row[5]): row[6]
            for row in session.execute(select(*reading_id, r.end_utc, r.value))
        }
        events = {
            (*row[:4],): tuple(row[4:])
            for row in session.execute(
                select(*event_id, e.title, e.start_utc, e.end_utc).where(e.status != "cancelled")
            )
        }
    return {"dups": dup_readings + dup_events, "readings": readings, "events": events}


def compare(soak: dict[str, Any], fresh: dict[str, Any], ics_from: datetime) -> Counter[str]:
    """Rows the soak lost, kept extra or holds with other values, against a fresh pull."""
    out: Counter[str] = Counter()
    for kind in ("readings", "events"):
        a, b = soak[kind], fresh[kind]
        if kind == "events":
            # An .ics feed is expanded around "now": older instances stay from older runs.
            a = {k: v for k, v in a.items() if k[0] != "ics" or v[1] >= ics_from}
        found = {
            "missing": sorted(b.keys() - a.keys()),
            "extra": sorted(a.keys() - b.keys()),
            "changed": sorted(k for k in a.keys() & b.keys() if a[k] != b[k]),
        }
        for what, keys in found.items():
            out[f"{kind} {what}"] = len(keys)
            for key in keys[:3]:  # enough to start looking
                print(f"  {kind} {what}: {key} soak={a.get(key)} fresh={b.get(key)}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--no-faults", action="store_true")
    ap.add_argument("--keep", type=Path, help="keep the data in this folder")
    ap.add_argument(
        "--no-heap-tuning", action="store_true", help="without the daemon's heap tuning and trim"
    )
    ap.add_argument("--trace-memory", action="store_true", help="list what grew after day 1 (slow)")
    ap.add_argument(
        "--meters-in-process",
        action="store_true",
        help="the meter step in the daemon's process, as before it had a child of its own",
    )
    args = ap.parse_args()
    os.environ.setdefault(KEY_ENV, "soak-benchmark-keyring-key")
    work = args.keep or Path(tempfile.mkdtemp(prefix="rb-soak-"))
    outage_day = START + timedelta(days=min(12, args.days // 2))
    outage = (outage_day.replace(hour=2), outage_day.replace(hour=5))
    fakes = Fakes(not args.no_faults, outage)
    counter = LogCounter()
    logging.getLogger("rhythm_bridge").addHandler(counter)
    logging.getLogger("rhythm_bridge").setLevel(logging.INFO)
    waits: list[float] = []
    import connectors.http

    connectors.http.sleep = waits.append  # a wait for the provider is simulated, not slept
    import bridge.daemon.heap
    import bridge.daemon.scheduler

    if args.meters_in_process:
        run_cycle = bridge.daemon.scheduler.run_cycle

        def in_process(*args: Any, meters_apart: bool = False, **kwargs: Any) -> Any:
            return run_cycle(*args, **kwargs)

        bridge.daemon.scheduler.run_cycle = in_process  # type: ignore[assignment]
    if args.no_heap_tuning:
        bridge.daemon.scheduler.trim_heap = lambda: None
    else:
        bridge.daemon.heap.tune_heap()  # as run_daemon does; the trim comes with every cycle
    try:
        run(args, work, fakes, counter, waits)
    finally:
        fakes.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def run(args: Any, work: Path, fakes: Fakes, counter: LogCounter, waits: list[float]) -> None:
    from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED

    from bridge.daemon.scheduler import CycleTracker, build_scheduler
    from bridge.intake.sources import enabled_sources, read_context, run_source

    settings = make_settings(work / "data", fakes.url)
    store = Store(settings.database_url)
    store_credentials(settings)
    for folder in (settings.sources.apple_health.watch_dir, settings.sources.garmin.export_dir):
        Path(folder).mkdir(parents=True, exist_ok=True)
    end = START + timedelta(days=args.days)
    rng = random.Random(5)
    answered: set[int] = set()
    seconds: list[tuple[datetime, float]] = []
    rss_by_day: dict[int, dict[str, int]] = {}
    rss_before = rss()
    wall = time.perf_counter()

    class TimedTracker(CycleTracker):
        def run(self, settings: Settings, store: Store) -> None:
            began = time.perf_counter()
            super().run(settings, store)
            seconds.append((datetime.now(UTC), time.perf_counter() - began))

    with time_machine.travel(START, tick=True) as clock:
        scheduler = build_scheduler(settings, store, TimedTracker())
        finished: set[str] = set()
        changed = threading.Condition()

        def on_job(event: Any) -> None:
            with changed:
                finished.add(event.job_id)
                changed.notify()

        scheduler.add_listener(on_job, EVENT_JOB_EXECUTED | EVENT_JOB_ERROR)
        drop_files(settings, 0)
        dropped = {0}
        due = {"cycle"}
        thread = threading.Thread(target=scheduler.start, daemon=True)
        thread.start()
        while True:
            with changed:
                if not changed.wait_for(lambda due=due: due <= finished, timeout=600):
                    raise SystemExit("a job has run for 10 minutes; the soak is stuck")
                finished.clear()
            day = (datetime.now(UTC) - START).days
            if day not in rss_by_day:
                rss_by_day[day] = rss()
                if day == 1 and args.trace_memory:
                    tracemalloc.start(8)
                    first_snapshot = tracemalloc.take_snapshot()
            answer_latest(store, rng, answered)
            jobs = scheduler.get_jobs()
            nxt = min(job.next_run_time for job in jobs)
            if nxt >= end:
                break
            due = {job.id for job in jobs if job.next_run_time <= nxt}
            drop_day = (nxt - START.astimezone(UTC)).days
            if drop_day not in dropped:
                drop_files(settings, drop_day)
                dropped.add(drop_day)
            fakes.set_clock(nxt)
            clock.move_to(nxt)
            scheduler.wakeup()
        scheduler.shutdown(wait=True)
        thread.join()
        logging.getLogger("rhythm_bridge").removeHandler(counter)  # the daemon's lines only
        elapsed = time.perf_counter() - wall
        rss_end = rss()
        if args.trace_memory:
            grown = tracemalloc.take_snapshot().compare_to(first_snapshot, "traceback")
            for stat in grown[:12]:
                print(f"{stat.size_diff / MB:+.2f} MB  {stat.count_diff:+d} blocks")
                print("    " + "\n    ".join(stat.traceback.format()[-8:]))

        # The truth at the end: every source pulled once more, then a fresh store pulled
        # in full over the same window, at the same instant, without faults.
        clock.move_to(end)
        fakes.set_clock(end, faults=False)
        ctx = read_context(settings, end)
        for name in enabled_sources(settings):
            run_source(store, settings, name, ctx)
        soak = identities(store)
        fresh_settings = make_settings(work / "fresh", fakes.url)
        fresh_settings.data_path.mkdir(parents=True)
        shutil.copy(settings.data_path / FILE_NAME, fresh_settings.data_path / FILE_NAME)
        fresh = Store(fresh_settings.database_url)
        since = START - timedelta(days=ctx.past_days)
        for name in enabled_sources(fresh_settings):
            outcome = run_source(fresh, fresh_settings, name, ctx, since=since)
            if outcome.error:
                raise SystemExit(f"the fresh pull of {name} failed: {outcome.error}")
        truth = identities(fresh)
        with fresh.session() as session:
            ics_from = session.execute(
                select(func.min(CalendarEvent.start_utc)).where(CalendarEvent.source == "ics")
            ).scalar()
        diff = compare(soak, truth, ics_from)
        fresh.dispose()

    with store.session() as session:
        recs = session.execute(select(func.count()).select_from(Recommendation)).scalar()
    stats = fakes.stats()
    store.dispose()
    timing = Timing(seconds, elapsed)
    report(
        args,
        timing=timing,
        soak=soak,
        diff=diff,
        recs=recs,
        stats=stats,
        counter=counter,
        waits=waits,
    )
    first = rss_by_day.get(1, rss_end)
    grew = {k: (rss_end[k] - first[k]) / MB for k in first}
    print(
        f"RSS: {rss_before['VmRSS'] / MB:.0f} MB before the first cycle, "
        f"{first['VmRSS'] / MB:.0f} MB after the first day, {rss_end['VmRSS'] / MB:.0f} MB at "
        f"the end: growth {grew['VmRSS']:+.1f} MB (target <= 20 MB; anonymous "
        f"{grew['RssAnon']:+.1f}, file-backed {grew['RssFile']:+.1f}, shared "
        f"{grew['RssShmem']:+.1f}); by day: "
        + ", ".join(
            f"{d}: {v['VmRSS'] / MB:.0f}"
            for d, v in sorted(rss_by_day.items())
            if d in (1, 2, 5) or d % 10 == 0
        )
    )


@dataclass(frozen=True)
class Timing:
    """How long each cycle took (with when it ended), and the whole run, in seconds."""

    seconds: list[tuple[datetime, float]]
    elapsed: float


def report(
    args: Any,
    *,
    timing: Timing,
    soak: dict[str, Any],
    diff: Counter[str],
    recs: int,
    stats: dict[str, Any],
    counter: LogCounter,
    waits: list[float],
) -> None:
    seconds, elapsed = timing.seconds, timing.elapsed
    first = [s for when, s in seconds if when < START + timedelta(days=1)]
    last = [s for when, s in seconds if when >= START + timedelta(days=args.days - 1)]
    p50 = statistics.median
    sources = sorted({s for s, _ in counter.syncs})
    faults = {
        k.removeprefix("fault:"): v for k, v in stats["counts"].items() if k.startswith("fault:")
    }
    print(f"soak: {args.days} simulated days in {elapsed / 60:.1f} min of wall time")
    # Absolute time: the 30 days from START include the extra hour of the DST change.
    expected = int(
        (START + timedelta(days=args.days) - START.astimezone(UTC)) / timedelta(minutes=15)
    )
    print(f"cycles run: {len(seconds)} (expected {expected}); recommendations: {recs}")
    print(f"records stored: {len(soak['readings'])} readings, {len(soak['events'])} live events")
    print(f"duplicates: {soak['dups']} (must be 0)")
    print(
        "against a fresh full pull at the end: "
        + ", ".join(f"{k} {v}" for k, v in sorted(diff.items()))
    )
    print(f"API requests: {stats['api_requests']}; injected faults: {faults or 'none'}")
    for source in sources:
        outcomes = {st: n for (s, st), n in counter.syncs.items() if s == source}
        print(f"  sync {source}: " + ", ".join(f"{st} {n}" for st, n in sorted(outcomes.items())))
    print(f"provider waits simulated: {len(waits)} ({sum(waits):.0f} s)")
    print(f"log lines: {dict(counter.levels) or 'no warnings or errors'}")
    for message, n in counter.messages.most_common(8):
        print(f"  {n:5d}  {message}")
    if first and last:
        print(
            f"cycle time: first day p50 {p50(first) * 1000:.0f} ms, last day p50 "
            f"{p50(last) * 1000:.0f} ms (ratio {p50(last) / p50(first):.2f})"
        )


if __name__ == "__main__":
    main()
