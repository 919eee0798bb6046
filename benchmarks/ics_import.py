"""A big calendar and hostile rules: `import ics` time and peak memory, against the naive way.

    python benchmarks/ics_import.py [--events 100000] [--workdir DIR]

Writes a calendar like the one of a person with a meeting-heavy job (100 k single events
over 2.7 years, about 14 MB, about 5 k of them inside the import window, plus 50 weekly
and daily series), then measures in separate processes (wall time, peak RSS from wait4):

  naive     the whole file parsed by icalendar and expanded by recurring-ical-events'
            `between` over the window (what connectors/ics.py did before the streaming
            reader; the baseline of this run)
  import    `rhythm-bridge import ics` into a fresh store: the streaming reader (a text
            scan keeps the window's events, parsed in batches, each series expanded alone
            under caps), the upserts and everything else
  hostile   the same command on a small file of rules made to hang an expander
            (FREQ=MINUTELY for a year, February 30th daily, INTERVAL=0 is refused)

The target is a peak RSS under 150 MB for the 100 k-event import.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

BIN = Path(sys.executable).parent
NOW = datetime.now(UTC).replace(microsecond=0)

NAIVE = """
import sys
from datetime import UTC, datetime, timedelta
import icalendar, recurring_ical_events, x_wr_timezone
now = datetime.now(UTC)
cal = x_wr_timezone.to_standard(icalendar.Calendar.from_ical(open(sys.argv[1], "rb").read()))
found = recurring_ical_events.of(cal).between(now - timedelta(days=35), now + timedelta(days=14))
print(len(found))
"""


def _stamp(when: datetime) -> str:
    return when.strftime("%Y%m%dT%H%M%SZ")


def write_calendar(path: Path, events: int) -> int:
    """A calendar of `events` single events over 2.7 years, most of them past; returns how
    many of them start inside the import window."""
    rng = random.Random(25)
    first = NOW - timedelta(days=700)
    span = (NOW + timedelta(days=280) - first).total_seconds()
    inside = 0
    lo, hi = NOW - timedelta(days=35), NOW + timedelta(days=14)
    with path.open("w", newline="") as fh:
        fh.write("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//rhythm-bridge//bench//EN\r\n")
        fh.write("X-WR-TIMEZONE:Europe/Berlin\r\n")
        for i in range(events):
            start = first + timedelta(seconds=int(rng.random() * span) // 900 * 900)
            end = start + timedelta(minutes=rng.choice((30, 45, 60, 90)))
            inside += lo <= start <= hi
            fh.write(
                f"BEGIN:VEVENT\r\nUID:bench-{i}@rhythm-bridge\r\nDTSTAMP:{_stamp(NOW)}\r\n"
                f"DTSTART:{_stamp(start)}\r\nDTEND:{_stamp(end)}\r\n"
                f"SUMMARY:Meeting {i}\r\nEND:VEVENT\r\n"
            )
        for i in range(50):  # series: weekly and daily, with a moved instance each
            start = NOW - timedelta(days=400 + i)
            fh.write(
                f"BEGIN:VEVENT\r\nUID:series-{i}@rhythm-bridge\r\nDTSTAMP:{_stamp(NOW)}\r\n"
                f"DTSTART:{_stamp(start)}\r\nDTEND:{_stamp(start + timedelta(hours=1))}\r\n"
                f"RRULE:FREQ={'WEEKLY' if i % 2 else 'DAILY'}\r\nSUMMARY:Series {i}\r\n"
                "END:VEVENT\r\n"
            )
        fh.write("END:VCALENDAR\r\n")
    return inside


HOSTILE = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\n"
    + "".join(
        f"BEGIN:VEVENT\r\nUID:h{i}\r\nDTSTAMP:{_stamp(NOW)}\r\n"
        f"DTSTART:{_stamp(NOW - timedelta(days=300))}\r\nDURATION:PT1M\r\nRRULE:{rule}\r\n"
        "SUMMARY:x\r\nEND:VEVENT\r\n"
        for i, rule in enumerate(
            ["FREQ=MINUTELY", "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30"] * 25
            + ["FREQ=MONTHLY;BYDAY=MO;BYSETPOS=-6"] * 25
        )
    )
    + "END:VCALENDAR\r\n"
)


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    _, status, usage = os.wait4(proc.pid, 0)
    out = proc.stdout.read().decode() if proc.stdout else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[0]} failed:\n{out}")
    return time.perf_counter() - started, usage.ru_maxrss / 1024, out.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="rb-ics-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        cal = work / "big.ics"
        inside = write_calendar(cal, args.events)
        hostile = work / "hostile.ics"
        hostile.write_text(HOSTILE, newline="")
        print(
            f"calendar: {args.events} events + 50 series, {cal.stat().st_size / 2**20:.1f} MB, "
            f"{inside} single events in the window"
        )
        env = {**os.environ, "RHYTHM_BRIDGE_DATA_DIR": str(work / "data")}
        config = work / "c.toml"
        config.write_text(f'data_dir = "{work / "data"}"\ntimezone = "Europe/Berlin"\n')
        cli = [str(BIN / "rhythm-bridge"), "--config", str(config), "import", "ics"]
        rows = [
            ("naive", measure([sys.executable, "-c", NAIVE, str(cal)], env)),
            ("import", measure([*cli, str(cal)], env)),
            ("hostile", measure([*cli, str(hostile)], env)),
        ]
        print(f"{'':8} {'seconds':>8} {'peak RSS MB':>12}  output")
        for name, (seconds, rss, out) in rows:
            print(f"{name:8} {seconds:8.1f} {rss:12.0f}  {out[:90]}")
        naive, streamed = rows[0][1], rows[1][1]
        print(
            f"import vs naive: {naive[0] / streamed[0]:.1f}x faster, "
            f"{naive[1] / streamed[1]:.1f}x less peak memory "
            f"(target: under 150 MB; {'met' if streamed[1] < 150 else 'MISSED'})"
        )
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
