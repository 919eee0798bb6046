"""One side of the A/B meter-store benchmark: the cycle's meter step of one source tree.

    PYTHONPATH=TREE python benchmarks/meter_worker.py DATA.pkl WORKDIR

Run by `benchmarks/meters.py --store` twice, once on this checkout and once on an exported
copy of the baseline commit, so both sides do the same work on the same data in the same
run. Written against what both trees have (`recompute_meters(store, settings, now,
full=...)`, `bridge.store.upsert`, the ingest keys), so it runs unchanged on either.

Reads one command per line on stdin, answers one line on stdout ("RESULT" and
JSON):
  load      write the old readings and events into a fresh SQLite store (kept as a copy)
  backfill  from that copy: the full recompute (`full=True`) a cycle before the new day
  cycle N   from the store after the backfill: the new day arrives (written untimed), one
            cycle computes it, then N cycles with nothing new
  apart N S the same as `cycle`, each step in a child process as the daemon runs it by
            default, the child started S seconds before the step is timed (the daemon
            starts it with the cycle, before the syncs); this tree only
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd


def load_into(store: Any, readings: pd.DataFrame, events: pd.DataFrame, first_uid: int = 0) -> None:
    """Write synthetic frames into a store as the ingest step would (one transaction)."""
    from bridge.intake.ingest import EVENT_KEY, READING_KEY
    from bridge.store import upsert
    from bridge.store.models import CalendarEvent, Reading

    # The timed tree's own column lists (the baseline's are the same, in the same order).
    from mappings.frames import EVENT_COLUMNS, READING_COLUMNS

    stamp = datetime.now(UTC)
    reading_rows = [
        {
            "source": "bench",
            "metric": m,
            "origin": o,
            "start_utc": s.to_pydatetime(warn=False),
            "end_utc": e.to_pydatetime(warn=False),
            "utc_offset_min": int(off),
            "value": None if v != v else float(v),
            "label": lab,
            "imported_at": stamp,
        }
        for m, s, e, v, lab, o, off in readings[READING_COLUMNS].itertuples(index=False)
    ]
    event_rows = [
        {
            "source": "bench",
            "calendar_id": "main",
            "uid": f"ev{first_uid + i}",
            "title": t,
            "start_utc": s.to_pydatetime(warn=False),
            "end_utc": e.to_pydatetime(warn=False),
            "action": a,
            "status": st,
            "transparency": tr,
            "all_day": bool(ad),
            "attendee_count": int(n),
            "updated_at": stamp,
        }
        for i, (s, e, a, st, tr, ad, n, t) in enumerate(
            events[EVENT_COLUMNS].itertuples(index=False)
        )
    ]
    with store.transaction() as session:
        if reading_rows:
            upsert(session, Reading, reading_rows, keys=READING_KEY)
        if event_rows:
            upsert(session, CalendarEvent, event_rows, keys=EVENT_KEY)


class Side:
    def __init__(self, data: Path, workdir: Path) -> None:
        from bridge.config import Settings

        frames = pd.read_pickle(data)
        self.old_r, self.old_e = frames["old_r"], frames["old_e"]
        self.new_r, self.new_e = frames["new_r"], frames["new_e"]
        self.now: datetime = frames["now"]
        self.tz: str = frames["tz"]
        self.work = workdir
        self.settings = Settings.model_validate(
            {"timezone": self.tz, "data_dir": str(workdir / "data")}
        )
        self.db = self.settings.data_path / "rhythm-bridge.db"

    def _open(self, copy: str | None) -> Any:
        from bridge.store import Store

        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.db}{suffix}").unlink(missing_ok=True)
        if copy:
            shutil.copy(self.work / copy, self.db)
        return Store(self.settings.database_url)

    def _keep(self, store: Any, name: str) -> None:
        store.dispose()
        shutil.copy(self.db, self.work / name)

    def load(self) -> dict[str, Any]:
        self.settings.data_path.mkdir(parents=True, exist_ok=True)
        store = self._open(None)
        t = time.perf_counter()
        load_into(store, self.old_r, self.old_e, 0)
        took = time.perf_counter() - t
        self._keep(store, "loaded.db")
        return {"load_s": took}

    def backfill(self) -> dict[str, Any]:
        from bridge.cycle.meters import recompute_meters

        store = self._open("loaded.db")
        t = time.perf_counter()
        slots = recompute_meters(store, self.settings, self.now - timedelta(days=1), full=True)
        took = time.perf_counter() - t
        self._keep(store, "backfilled.db")
        return {"backfill_s": took, "slots": slots}

    def cycle(self, repeat: int, ahead: float | None = None) -> dict[str, Any]:
        from bridge.cycle.meters import recompute_meters

        if ahead is not None:
            from bridge.cycle.meters_apart import MeterChild, recompute_apart

            def recompute_meters(store: Any, settings: Any, now: datetime) -> int:
                child = MeterChild()
                time.sleep(ahead)  # the cycle's syncs, waiting on the network
                t = time.perf_counter()
                done = recompute_apart(store, settings, now, child=child)
                self.step_s.append(time.perf_counter() - t)
                return done

        self.step_s: list[float] = []
        store = self._open("backfilled.db")
        load_into(store, self.new_r, self.new_e, len(self.old_e))
        t = time.perf_counter()
        done = recompute_meters(store, self.settings, self.now)
        new_day = time.perf_counter() - t
        nothing, again = [], 0
        for _ in range(repeat):
            t = time.perf_counter()
            again = recompute_meters(store, self.settings, self.now)
            nothing.append(time.perf_counter() - t)
        store.dispose()
        if ahead is not None:  # the step alone, not the wait before it
            new_day, nothing = self.step_s[0], self.step_s[1:]
        return {"new_day_s": new_day, "new_day_slots": done, "nothing_s": nothing, "slots": again}


def main() -> None:
    data, workdir = Path(sys.argv[1]), Path(sys.argv[2])
    import bridge

    tree = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]
    # The point is to time that tree: refuse to time whichever `bridge` the venv points at.
    if tree and not Path(bridge.__file__).resolve().is_relative_to(Path(tree).resolve()):
        raise SystemExit(f"meter_worker: bridge imported from {bridge.__file__}, not {tree}")
    side = Side(data, workdir)
    for line in sys.stdin:
        cmd, *args = line.split()
        if cmd == "load":
            out = side.load()
        elif cmd == "backfill":
            out = side.backfill()
        elif cmd == "cycle":
            out = side.cycle(int(args[0]))
        elif cmd == "apart":
            out = side.cycle(int(args[0]), ahead=float(args[1]))
        else:
            raise SystemExit(f"meter_worker: unknown command {cmd!r}")
        print("RESULT", json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
