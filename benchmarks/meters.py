"""Benchmark of the meter mapper on five years of synthetic data.

    .venv/bin/python benchmarks/meters.py [--years 5]

Data: minute heart rate for the last 90 days, hourly steps from a watch (and from a phone
for the last year, overlapping), nightly sleep stages, HRV and resting heart rate, and about
8 calendar events a day. Prints, with the row counts:
  - a full recompute of every slot (target <= 3 s),
  - one incremental cycle when a new day arrives: the rows the pipeline would load (the
    63-day lookback, without minute heart rate, which no meter reads) cut from the frames,
    and the new day's slots computed (target <= 100 ms),
  - the same-run baseline (one pandas sort of the readings frame), and the ratios to it,
    because the machine is shared and absolute times are noisy;
  - with --store, the pipeline's meter step on real SQLite stores, this tree against the
    baseline commit (default: main just before issue 17 kept the whole history, meters for
    the export window only) in the same run, each in its own process on its own copy of
    the same data (benchmarks/meter_worker.py): the history backfill (every slot from the
    first day with data computed and stored, target <= 10 s) as a median and as the median
    ratio to the mapping-only full recompute timed beside it; then interleaved rounds of
    the cycle after a new day arrives and the cycle with nothing new, as medians and the
    median of the per-round ratios to the baseline ("no slower than today": <= 1).

    .venv/bin/python benchmarks/meters.py --store [--rounds 5] [--baseline COMMIT]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.meter_worker import load_into
from mappings.frames import USED_METRICS
from mappings.meters import EVENT_COLUMNS, READING_COLUMNS, compute_slots
from mappings.slots import SlotKey, slots_between

TZ = ZoneInfo("Europe/Berlin")
LOOKBACK_DAYS = 63  # what bridge.cycle.meters loads before the first slot it recomputes
ACTIONS = ["DEEP_WORK", "ADMIN_WORK", "LEARN", "EXERCISE", "SOCIALIZE", "FAMILY_TIME", "ME_TIME"]


def _utc(local_naive: pd.DatetimeIndex) -> pd.DatetimeIndex:
    return local_naive.tz_localize(TZ, ambiguous="NaT", nonexistent="shift_forward").tz_convert(
        "UTC"
    )


def _frame(columns: dict[str, object]) -> pd.DataFrame:
    return pd.DataFrame(columns)


def synth(first: date, days: int, seed: int = 7) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Readings and events for `days` local days from `first` (deterministic)."""
    rng = np.random.default_rng(seed)
    day0 = pd.Timestamp(first)
    d = pd.date_range(day0, periods=days, freq="D")
    parts = []
    # Hourly steps from the watch, all day; a phone overlapping for the last year.
    hours = pd.date_range(day0, periods=days * 24, freq="h")
    active = (hours.hour >= 7) & (hours.hour < 22)
    steps = np.where(active, rng.gamma(2.0, 300.0, len(hours)), rng.gamma(1.0, 5.0, len(hours)))
    start = _utc(hours)
    ok = ~start.isna()
    parts.append(
        _readings(
            "steps",
            start[ok],
            start[ok] + pd.Timedelta(minutes=59),
            value=steps[ok],
            label="",
            origin="Apple Watch",
        )
    )
    phone = ok & (hours >= hours[-1] - pd.Timedelta(days=365)) & active
    parts.append(
        _readings(
            "steps",
            start[phone],
            start[phone] + pd.Timedelta(minutes=59),
            value=steps[phone] * 0.9,
            label="",
            origin="iPhone",
        )
    )
    # Nightly sleep: 23:00 + jitter, 12 stage intervals of ~38 min.
    bed = d - pd.Timedelta(hours=1) + pd.to_timedelta(rng.normal(0, 30, days), unit="min")
    stage_names = np.array(["core", "deep", "core", "rem"] * 3)
    lengths = rng.normal(38, 6, (days, 12)).clip(10, 70)
    offsets = np.cumsum(lengths, axis=1) - lengths
    s_local = bed.to_numpy()[:, None] + (offsets * 60e9).astype("timedelta64[ns]")
    e_local = s_local + (lengths * 60e9).astype("timedelta64[ns]")
    s_utc = _utc(pd.DatetimeIndex(s_local.ravel()))
    e_utc = _utc(pd.DatetimeIndex(e_local.ravel()))
    ok = ~(s_utc.isna() | e_utc.isna())
    parts.append(
        _readings(
            "sleep",
            s_utc[ok],
            e_utc[ok],
            value=np.zeros(ok.sum()),
            label=np.tile(stage_names, days)[ok],
            origin="Apple Watch",
        )
    )
    # HRV (SDNN) at 03:00 and resting HR at 07:00, once a day.
    at3 = _utc(d + pd.Timedelta(hours=3))
    parts.append(
        _readings(
            "hrv_sdnn",
            at3,
            at3 + pd.Timedelta(minutes=1),
            value=rng.lognormal(np.log(48), 0.25, days),
            label="",
            origin="Apple Watch",
        )
    )
    at7 = _utc(d + pd.Timedelta(hours=7))
    parts.append(
        _readings(
            "resting_hr", at7, at7, value=rng.normal(57, 3, days), label="", origin="Apple Watch"
        )
    )
    # Minute heart rate for the last 90 days.
    minutes = pd.date_range(
        day0 + pd.Timedelta(days=max(days - 90, 0)),
        day0 + pd.Timedelta(days=days),
        freq="min",
        inclusive="left",
    )
    m_utc = _utc(minutes)
    ok = ~m_utc.isna()
    parts.append(
        _readings(
            "heart_rate",
            m_utc[ok],
            m_utc[ok],
            value=rng.normal(70, 10, ok.sum()),
            label="",
            origin="Apple Watch",
        )
    )
    readings = pd.concat(parts, ignore_index=True)
    # ~8 events a day between 08:00 and 21:00.
    per_day = 8
    ev_start = d.repeat(per_day) + pd.to_timedelta(
        np.tile(np.arange(per_day) * 95 + 8 * 60, days) + rng.integers(0, 30, days * per_day),
        unit="min",
    )
    ev_len = pd.to_timedelta(rng.choice([30, 45, 60, 90], days * per_day), unit="min")
    s = _utc(ev_start)
    events = pd.DataFrame(
        {
            "start_utc": s,
            "end_utc": s + ev_len,
            "action": rng.choice(ACTIONS, days * per_day),
            "status": "confirmed",
            "transparency": "opaque",
            "all_day": False,
            "attendee_count": rng.choice([0, 1, 3, 6], days * per_day),
            "title": np.where(rng.random(days * per_day) < 0.01, "Report deadline", "Event"),
        }
    )[EVENT_COLUMNS]
    return readings, events.dropna(subset=["start_utc"]).reset_index(drop=True)


def _readings(metric, start, end, *, value, label, origin) -> pd.DataFrame:
    n = len(start)
    offset = (start.tz_convert(TZ).tz_localize(None) - start.tz_localize(None)) // pd.Timedelta(
        minutes=1
    )
    return pd.DataFrame(
        {
            "metric": metric,
            "start_utc": start,
            "end_utc": end,
            "value": np.asarray(value, dtype=float),
            "label": label if not isinstance(label, str) else np.full(n, label),
            "origin": origin,
            "utc_offset_min": np.asarray(offset, dtype=np.int64),
        }
    )[READING_COLUMNS]


def best_of(fn, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


# main just before issue 17's history work was merged (meters kept to the export window):
# what "no slower than today" is measured against.
__all__ = ["load_into", "synth"]

PRE_HISTORY = "fe6422d5ed51ba85ead3d6c6ad405c844d19552f"
ROOT = Path(__file__).resolve().parent.parent
WORKER = Path(__file__).resolve().with_name("meter_worker.py")


class Worker:
    """A `meter_worker.py` process timing the meter step of one source tree."""

    def __init__(self, tree: Path, data: Path, workdir: Path) -> None:
        import os
        import subprocess

        env = {**os.environ, "PYTHONPATH": str(tree)}
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), str(data), str(workdir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def ask(self, command: str) -> dict:
        import json

        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        for line in self.proc.stdout:
            if line.startswith("RESULT "):
                return json.loads(line[7:])
        raise SystemExit(f"meters: the worker stopped (exit {self.proc.wait()}) on {command!r}")

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait()


def export_tree(rev: str, into: Path) -> Path:
    """The source tree of `rev` (git archive: no worktree registered in the repository)."""
    import subprocess

    into.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=False
    )
    if archive.returncode:
        raise SystemExit(f"meters: cannot export baseline {rev}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


# How long before its meter step the daemon's cycle has started the step's child: a
# stand-in for the syncs, which mostly wait on the network.
AHEAD_S = 1.0


def store_ab(
    frames: dict, rounds: int, nothing_repeat: int, baseline: str, mapping: Callable[[], object]
) -> None:
    """The pipeline's meter step on real SQLite stores, this tree (A) against `baseline` (B)
    in the same run: each side in its own process on its own copy of the same data.

    The history backfill (every slot from the first day with data, `full=True`) alternates
    with the mapping-only full recompute in this process: their ratio is taken per pair.
    Then `rounds` rounds, A and B in alternating order, each from the store after the
    backfill: the new day arrives, one cycle computes it, `nothing_repeat` cycles find
    nothing new. Reported: medians, and the median of the per-round ratios A / B."""
    import statistics
    import tempfile

    med = statistics.median
    with tempfile.TemporaryDirectory(prefix="rb-meters-") as tmp:
        data = Path(tmp) / "frames.pkl"
        pd.to_pickle(frames, data)
        base_tree = export_tree(baseline, Path(tmp) / "baseline")
        (Path(tmp) / "a").mkdir()
        (Path(tmp) / "b").mkdir()
        a = Worker(ROOT, data, Path(tmp) / "a")
        b = Worker(base_tree, data, Path(tmp) / "b")
        try:
            load_a, load_b = a.ask("load")["load_s"], b.ask("load")["load_s"]
            b.ask("backfill")
            backfills, ratios, slots = [], [], 0
            for _ in range(rounds):
                t = time.perf_counter()
                mapping()
                mapping_s = time.perf_counter() - t
                done = a.ask("backfill")
                backfills.append(done["backfill_s"])
                ratios.append(done["backfill_s"] / mapping_s)
                slots = done["slots"]
            cycles: dict[str, list[dict]] = {"a": [], "b": [], "cold": [], "ahead": []}
            for i in range(rounds):
                order = [("a", a), ("b", b)] if i % 2 == 0 else [("b", b), ("a", a)]
                for name, side in order:
                    cycles[name].append(side.ask(f"cycle {nothing_repeat}"))
                cycles["cold"].append(a.ask(f"apart {nothing_repeat} 0"))
                cycles["ahead"].append(a.ask(f"apart {nothing_repeat} {AHEAD_S}"))
        finally:
            a.close()
            b.close()
    n = len(frames["old_r"])
    print(
        f"store: {n:,} readings and {len(frames['old_e']):,} events written in "
        f"{load_a:.1f} s (baseline tree {load_b:.1f} s)"
    )
    print(
        f"history backfill: {slots:,} slots computed and stored on SQLite in "
        f"{med(backfills):.2f} s median of {rounds} (min {min(backfills):.2f}, max "
        f"{max(backfills):.2f}; target <= 10 s) = {med(ratios):.2f}x the mapping-only full "
        f"recompute (median of per-pair ratios, {min(ratios):.2f}-{max(ratios):.2f}x)"
    )
    new_a = [c["new_day_s"] for c in cycles["a"]]
    new_b = [c["new_day_s"] for c in cycles["b"]]
    idle_a = [med(c["nothing_s"]) for c in cycles["a"]]
    idle_b = [med(c["nothing_s"]) for c in cycles["b"]]
    new_ratio = med(x / y for x, y in zip(new_a, new_b, strict=True))
    idle_ratio = med(x / y for x, y in zip(idle_a, idle_b, strict=True))
    print(
        f"baseline {baseline[:9]} (before the whole history was kept: meters for the export "
        f"window only), same data, same run, {rounds} interleaved rounds:"
    )
    print(
        f"  the cycle after a new day arrives: {med(new_a) * 1000:.0f} ms "
        f"({cycles['a'][0]['new_day_slots']} slots) vs baseline {med(new_b) * 1000:.0f} ms "
        f"({cycles['b'][0]['new_day_slots']} slots) = {new_ratio:.2f}x"
    )
    print(
        f"  a cycle with nothing new: {med(idle_a) * 1000:.0f} ms ({cycles['a'][0]['slots']} "
        f"slot) vs baseline {med(idle_b) * 1000:.0f} ms ({cycles['b'][0]['slots']} slot) = "
        f"{idle_ratio:.2f}x"
    )
    # The daemon's default: the same step in a child process ([meters] in_process = false),
    # started at the step, and started with the cycle, AHEAD_S before the step.
    for name, when in (("cold", "started at the step"), ("ahead", f"started {AHEAD_S:g} s ahead")):
        new_c = [c["new_day_s"] for c in cycles[name]]
        idle_c = [med(c["nothing_s"]) for c in cycles[name]]
        print(
            f"  the step in a child process {when}: after a new day {med(new_c) * 1000:.0f} ms "
            f"= {med(new_c) / med(new_b):.2f}x the baseline; nothing new "
            f"{med(idle_c) * 1000:.0f} ms = {med(idle_c) / med(idle_b):.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--years", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--store", action="store_true", help="also time the pipeline step on a SQLite store"
    )
    parser.add_argument(
        "--rounds", type=int, default=5, help="--store: interleaved A/B rounds (medians)"
    )
    parser.add_argument(
        "--baseline",
        default=PRE_HISTORY,
        help="--store: the commit to compare with (default: main before issue 17)",
    )
    args = parser.parse_args()
    days = int(args.years * 365)
    last_day = date(2026, 11, 19)
    first = last_day - timedelta(days=days - 1)
    readings, events = synth(first, days + 1)
    # Everything up to the last day is "old"; the last day is the one that arrives.
    cut = pd.Timestamp(datetime.combine(last_day, datetime.min.time()), tz=TZ).tz_convert("UTC")
    old_r, new_r = readings[readings["end_utc"] < cut], readings[readings["end_utc"] >= cut]
    old_e, new_e = events[events["start_utc"] < cut], events[events["start_utc"] >= cut]
    now = datetime.combine(last_day, datetime.min.time(), tzinfo=TZ) + timedelta(hours=23)
    slots = slots_between(SlotKey(first, 0), SlotKey(last_day - timedelta(days=1), 3))
    print(
        f"data: {days} days; {len(old_r):,} readings "
        f"({(old_r['metric'] == 'heart_rate').sum():,} minute heart rate, "
        f"{(old_r['metric'] == 'steps').sum():,} hourly steps, "
        f"{(old_r['metric'] == 'sleep').sum():,} sleep stages), {len(old_e):,} calendar events"
    )

    base_t, _ = best_of(lambda: old_r.sort_values(["metric", "origin", "start_utc"]), args.repeat)
    full_t, full = best_of(
        lambda: compute_slots(old_r, old_e, slots, tz=TZ, now=now), max(1, args.repeat - 1)
    )
    print(
        f"full recompute: {len(full):,} slots from {len(old_r) + len(old_e):,} rows in "
        f"{full_t:.2f} s ({len(full) / full_t:,.0f} slots/s; target <= 3 s)"
    )

    # The store already holds the new day; a cycle loads the lookback (as the pipeline's
    # SQL does: no minute heart rate, the meters do not read it) and computes the new slots.
    all_r = pd.concat([old_r, new_r], ignore_index=True)
    all_e = pd.concat([old_e, new_e], ignore_index=True)

    def incremental():
        lo = cut - pd.Timedelta(days=LOOKBACK_DAYS)
        r = all_r[(all_r["end_utc"] >= lo) & all_r["metric"].isin(USED_METRICS)]
        e = all_e[all_e["end_utc"] >= lo]
        new_slots = [SlotKey(last_day, s) for s in range(4)]
        return len(r) + len(e), compute_slots(r, e, new_slots, tz=TZ, now=now, previous=full[-1])

    inc_t, (rows, inc) = best_of(incremental, args.repeat * 3)
    print(
        f"incremental cycle (a new day arrives: {len(new_r):,} readings, {len(new_e)} events): "
        f"{len(inc)} slots from the {rows:,} rows of the lookback in {inc_t * 1000:.0f} ms "
        f"(target <= 100 ms)"
    )
    print(
        f"baseline (pandas sort of the {len(old_r):,} readings): {base_t * 1000:.0f} ms; "
        f"full = {full_t / base_t:.1f}x baseline, incremental = {inc_t / base_t:.2f}x baseline, "
        f"full / incremental = {full_t / inc_t:.0f}x"
    )
    if args.store:
        frames = {
            "old_r": old_r,
            "old_e": old_e,
            "new_r": new_r,
            "new_e": new_e,
            "now": now,
            "tz": str(TZ),
        }
        store_ab(
            frames,
            args.rounds,
            args.repeat,
            args.baseline,
            lambda: compute_slots(old_r, old_e, slots, tz=TZ, now=now),
        )


if __name__ == "__main__":
    main()
