"""What finding a free window adds to the recommendation step, measured in the same run.

    .venv/bin/python benchmarks/free_windows.py [--calendars 4] [--weeks 8]

A SQLite store in a temporary folder holds `--calendars` work calendars over `--weeks`
weeks (three meetings each working day, one of them tentative). Baseline: the observation
as the cycle built it before windows (meters + the slot's first event). Measured: planning
the slot (one query for the look-ahead, busy blocks, free windows per slot) and the
observation with it; and with the calendar full for the whole look-ahead (an out-of-office
block), planning plus the search for the next free window past it (the no-window case).
Each rate is the median of `--runs` runs. Prints throughput and the ratios.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, datetime, timedelta
from statistics import median
from zoneinfo import ZoneInfo

from bridge.config import Settings
from bridge.cycle.recommend import next_free_window, observation_for, plan_slot
from bridge.store import Store, upsert
from bridge.store.models import CalendarEvent
from connectors.base import EventRecord
from mappings.slots import slot_of_instant

BERLIN = ZoneInfo("Europe/Berlin")


def fill(store: Store, calendars: int, weeks: int, start: datetime) -> int:
    rows = []
    for c in range(calendars):
        for day in range(weeks * 7):
            base = start + timedelta(days=day)
            if base.weekday() >= 5:
                continue
            for i, (h, m, minutes) in enumerate(((9, 0, 15), (10, 30, 60), (13, 0, 45))):
                s = base.replace(hour=h, minute=m)
                ev = EventRecord(
                    calendar_id=f"cal{c}",
                    uid=f"bench-{c}-{day}-{i}",
                    title="Meeting",
                    start=s,
                    end=s + timedelta(minutes=minutes),
                    status="tentative" if i == 2 else "confirmed",
                )
                rows.append(ev.row("google_calendar", datetime.now(UTC)))
    with store.transaction() as session:
        upsert(session, CalendarEvent, rows, keys=("source", "calendar_id", "uid", "recurrence_id"))
    return len(rows)


def rate(fn, n: int, runs: int = 1) -> float:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        out.append(n / (time.perf_counter() - start))
    return median(out)


def out_of_office(store: Store, start: datetime, days: int) -> None:
    ev = EventRecord(
        calendar_id="cal0",
        uid="bench-ooo",
        title="Conference",
        start=start,
        end=start + timedelta(days=days),
        # With times: away altogether (an all-day one would block only the work actions).
        event_type="outOfOffice",
    )
    with store.transaction() as session:
        upsert(
            session,
            CalendarEvent,
            [ev.row("google_calendar", datetime.now(UTC))],
            keys=("source", "calendar_id", "uid", "recurrence_id"),
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calendars", type=int, default=4)
    parser.add_argument("--weeks", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings.model_validate({"timezone": "Europe/Berlin", "data_dir": tmp})
        store = Store(settings.database_url)
        first = datetime(2026, 11, 2, tzinfo=BERLIN)
        events = fill(store, args.calendars, args.weeks, first)
        now = datetime(2026, 11, 25, 8, 50, tzinfo=BERLIN).astimezone(UTC)
        key = slot_of_instant(now, BERLIN)
        base = rate(lambda: observation_for(store, settings, key, now), args.repeat, args.runs)

        def planned() -> None:
            plan = plan_slot(store, settings, key, now)
            observation_for(store, settings, plan.key, now, plan)

        with_windows = rate(planned, args.repeat, args.runs)
        # The look-ahead (8 slots from this morning) is one out-of-office stretch.
        out_of_office(store, datetime(2026, 11, 25, tzinfo=BERLIN), 3)

        def booked() -> None:
            plan = plan_slot(store, settings, key, now)
            assert not plan.available
            last = key
            for _ in range(settings.windows.look_ahead_slots - 1):
                last = last.next()
            assert next_free_window(store, settings, last, now, 10) is not None

        full = rate(booked, args.repeat, args.runs)
        store.dispose()
    print(f"{events} events in {args.calendars} calendars over {args.weeks} weeks (SQLite)")
    print(f"observation without windows: {base:,.0f}/s ({1000 / base:.2f} ms)")
    print(
        f"plan + observation with windows: {with_windows:,.0f}/s ({1000 / with_windows:.2f} ms), "
        f"{base / with_windows:.1f}x the baseline's time"
    )
    print(
        f"full look-ahead, plan + next free window: {full:,.0f}/s ({1000 / full:.2f} ms), "
        f"{base / full:.1f}x the baseline's time"
    )


if __name__ == "__main__":
    main()
