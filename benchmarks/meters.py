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
  - with --store, the pipeline's meter step on SQLite: the history backfill (every slot
    from the first day with data computed and stored, target <= 10 s, as a ratio to the
    mapping-only full recompute of this run), then the cycles after it, and the same
    cycles with meters kept to the export window (as before the whole history was kept).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bridge.intake.ingest import EVENT_KEY, READING_KEY
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
            "steps", start[ok], start[ok] + pd.Timedelta(minutes=59), steps[ok], "", "Apple Watch"
        )
    )
    phone = ok & (hours >= hours[-1] - pd.Timedelta(days=365)) & active
    parts.append(
        _readings(
            "steps",
            start[phone],
            start[phone] + pd.Timedelta(minutes=59),
            steps[phone] * 0.9,
            "",
            "iPhone",
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
            np.zeros(ok.sum()),
            np.tile(stage_names, days)[ok],
            "Apple Watch",
        )
    )
    # HRV (SDNN) at 03:00 and resting HR at 07:00, once a day.
    at3 = _utc(d + pd.Timedelta(hours=3))
    parts.append(
        _readings(
            "hrv_sdnn",
            at3,
            at3 + pd.Timedelta(minutes=1),
            rng.lognormal(np.log(48), 0.25, days),
            "",
            "Apple Watch",
        )
    )
    at7 = _utc(d + pd.Timedelta(hours=7))
    parts.append(_readings("resting_hr", at7, at7, rng.normal(57, 3, days), "", "Apple Watch"))
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
            "heart_rate", m_utc[ok], m_utc[ok], rng.normal(70, 10, ok.sum()), "", "Apple Watch"
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


def _readings(metric, start, end, value, label, origin) -> pd.DataFrame:
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


def load_into(store, readings: pd.DataFrame, events: pd.DataFrame, first_uid: int = 0) -> None:
    """Write synthetic frames into a store as the ingest step would (one transaction)."""
    from bridge.store import upsert
    from bridge.store.models import CalendarEvent, Reading

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


def store_cycle(
    readings: pd.DataFrame, events: pd.DataFrame, new_r, new_e, now, repeat, mapping_s: float
) -> None:
    """The pipeline's meter step on a real SQLite store: the history backfill (every slot
    from the first day with data, computed and stored), then the cycles after it; the same
    cycles with the meters kept to the export window (`history_days = 7`, what the
    pipeline did before it kept the whole history) on a copy of the same store."""
    import shutil
    import tempfile

    from bridge.config import Settings
    from bridge.cycle.meters import recompute_meters
    from bridge.store import Store

    def cycles(store, settings) -> tuple[float, int, float, int, float, int]:
        backfill_t, slots = best_of(
            lambda: recompute_meters(store, settings, now - timedelta(days=1), full=True), 1
        )
        load_into(store, new_r, new_e, len(events))
        cycle_t, done = best_of(lambda: recompute_meters(store, settings, now), 1)
        again_t, again = best_of(lambda: recompute_meters(store, settings, now), repeat)
        return backfill_t, slots, cycle_t, done, again_t, again

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings.model_validate({"timezone": str(TZ), "data_dir": f"{tmp}/a"})
        window = Settings.model_validate(
            {"timezone": str(TZ), "data_dir": f"{tmp}/b", "meters": {"history_days": 7}}
        )
        store = Store(settings.database_url)
        t = time.perf_counter()
        load_into(store, readings, events)
        load_t = time.perf_counter() - t
        store.dispose()
        window.data_path.mkdir(parents=True)
        shutil.copy(settings.data_path / "rhythm-bridge.db", window.data_path / "rhythm-bridge.db")
        store = Store(settings.database_url)
        backfill_t, slots, cycle_t, done, again_t, again = cycles(store, settings)
        store.dispose()
        store = Store(window.database_url)
        w_backfill_t, w_slots, w_cycle_t, w_done, w_again_t, w_again = cycles(store, window)
        store.dispose()
    print(f"store: {len(readings):,} readings and {len(events):,} events written in {load_t:.1f} s")
    print(
        f"history backfill: {slots:,} slots computed and stored on SQLite in {backfill_t:.2f} s "
        f"(target <= 10 s) = {backfill_t / mapping_s:.1f}x the mapping-only full recompute"
    )
    print(
        f"the cycle after a new day arrives ({done} slots): {cycle_t * 1000:.0f} ms; "
        f"a cycle with nothing new ({again} slot): {again_t * 1000:.0f} ms"
    )
    print(
        f"the same with meters kept to the export window (history_days = 7; backfill "
        f"{w_slots} slots in {w_backfill_t * 1000:.0f} ms): new day ({w_done} slots) "
        f"{w_cycle_t * 1000:.0f} ms, nothing new ({w_again} slot) {w_again_t * 1000:.0f} ms; "
        f"whole history / window: {cycle_t / w_cycle_t:.2f}x and {again_t / w_again_t:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--years", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--store", action="store_true", help="also time the pipeline step on a SQLite store"
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
        store_cycle(old_r, old_e, new_r, new_e, now, args.repeat, full_t)


if __name__ == "__main__":
    main()
