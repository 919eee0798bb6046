"""Benchmark of to-do imports: a VTODO feed of N tasks imported, re-imported, and counted.

    .venv/bin/python benchmarks/tasks_import.py [--tasks 100000]

Writes a Nextcloud-shaped .ics of N VTODOs (due dates, a third completed, some reopened
on the second import), then prints, each in a fresh subprocess so peak RSS is its own:
  - baseline: icalendar parsing the file and nothing else (the floor every import pays),
  - the first import (every task new: rows + history),
  - the second import of a changed file (10 % reopened, 1 % removed: only those change),
  - the meter step on the result (one week of slots with every task replayed),
with throughput, the ratio to the same-run baseline (the machine is shared, absolute
times are noisy), and the peak RSS of each against the baseline's.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_feed(path: Path, n: int, *, changed: bool) -> None:
    rng = random.Random(24)
    first = date(2026, 8, 1)
    with path.open("w", encoding="utf-8", newline="") as fh:
        fh.write("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Nextcloud Tasks v0.16.1\r\n")
        for i in range(n):
            due = first + timedelta(days=rng.randrange(120))
            done = rng.random() < 0.33 and not (changed and i % 10 == 1)
            priority = rng.choice((0, 1, 5, 9))
            if changed and i % 100 == 0:
                continue  # removed
            fh.write(
                f"BEGIN:VTODO\r\nUID:task-{i}@bench\r\nDTSTAMP:20261119T080000Z\r\n"
                f"CREATED:20260701T090000Z\r\nSUMMARY:Task number {i}\r\n"
                f"DUE;VALUE=DATE:{due:%Y%m%d}\r\n"
            )
            if done:
                fh.write(
                    "STATUS:COMPLETED\r\nCOMPLETED:20261001T101500Z\r\nPERCENT-COMPLETE:100\r\n"
                )
            else:
                fh.write("STATUS:NEEDS-ACTION\r\n")
            fh.write(f"PRIORITY:{priority}\r\nEND:VTODO\r\n")
        fh.write("END:VCALENDAR\r\n")


CHILD = r"""
import json, resource, sys, time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo
sys.path.insert(0, sys.argv[1])
step, data_dir, feed = sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
tz = ZoneInfo("Europe/Berlin")
now = datetime(2026, 11, 19, 20, 0, tzinfo=tz)
started = time.perf_counter()
out = {}
if step == "parse":
    import icalendar
    cal = icalendar.Calendar.from_ical(feed.read_bytes())
    out["tasks"] = sum(1 for _ in cal.walk("VTODO"))
else:
    from bridge.config import Settings
    from bridge.store import Store
    settings = Settings.model_validate({"timezone": "Europe/Berlin", "data_dir": str(data_dir)})
    store = Store(settings.database_url)
    if step == "meters":
        from bridge.cycle.meters import recompute_meters
        out["slots"] = recompute_meters(store, settings, now, full=True)
    else:
        from bridge.intake.ingest import import_file
        from connectors.base import ReadContext
        s = import_file(store, "ics", feed, ReadContext(tz=tz, now=now), force=True)
        out.update(tasks=s.by_type.get("task", 0), changed=s.new, deleted=s.cancelled)
    store.dispose()
out["seconds"] = time.perf_counter() - started
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def run(step: str, data_dir: Path, feed: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT), step, str(data_dir), str(feed)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rb-tasks-bench-") as tmp:
        root = Path(tmp)
        feed = root / "tasks.ics"  # one path: the second version replaces the first
        write_feed(feed, args.tasks, changed=False)
        print(f"feed: {args.tasks:,} VTODOs, {feed.stat().st_size / 1e6:.1f} MB")
        base = run("parse", root / "data", feed)
        rows = [
            ("baseline: icalendar parse only", base, base["tasks"]),
            ("first import (all new)", run("import", root / "data", feed), args.tasks),
        ]
        write_feed(feed, args.tasks, changed=True)
        rows.append(
            ("re-import, ~7 % reopened, 1 % gone", run("import", root / "data", feed), None)
        )
        rows.append(("meters, full 7-day window", run("meters", root / "data", feed), None))
        for name, res, n in rows:
            rate = f"{n / res['seconds']:>9,.0f} tasks/s" if n else " " * 17
            ratio = res["seconds"] / base["seconds"]
            rss, rss_ratio = res["peak_rss_mb"], res["peak_rss_mb"] / base["peak_rss_mb"]
            counts = {k: v for k, v in res.items() if k not in ("seconds", "peak_rss_mb")}
            print(
                f"{name:<38} {res['seconds']:7.2f} s {rate}  x{ratio:5.2f}"
                f"  peak RSS {rss:6.0f} MB (x{rss_ratio:.2f})  {json.dumps(counts)}"
            )


if __name__ == "__main__":
    main()
