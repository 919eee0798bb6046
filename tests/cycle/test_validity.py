"""The validity report: meters as of each check-in, rho with an interval, the 14-day rule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from bridge.cycle.validity import paired_history, report
from bridge.intake.checkins import record_checkins
from bridge.store import upsert
from bridge.store.models import Reading
from mappings.validity import MIN_DAYS

START = datetime(2026, 9, 1, 4, 0, tzinfo=UTC)  # 06:00 Berlin: waking


def _night(day: int, minutes: float) -> dict:
    wake = START + timedelta(days=day)
    return {
        "source": "fitbit",
        "metric": "sleep",
        "origin": "band",
        "start_utc": wake - timedelta(minutes=minutes),
        "end_utc": wake,
        "utc_offset_min": 120,
        "value": None,
        "unit": "",
        "label": "asleep",
        "device": "",
        "revision": "",
        "imported_at": START,
    }


def _history(store, settings, days: int, follows: bool) -> None:
    rng = np.random.default_rng(3)
    minutes = rng.uniform(300, 540, days)
    with store.transaction() as s:
        upsert(
            s,
            Reading,
            [_night(d, m) for d, m in enumerate(minutes)],
            keys=("source", "metric", "origin", "start_utc", "end_utc", "label"),
        )
    for d, m in enumerate(minutes):
        energy = 1 + 4 * (m - 300) / 240 if follows else float(rng.integers(1, 6))
        # Said at 08:00, two hours after waking; a later night is never seen.
        at = START + timedelta(days=d, hours=2)
        record_checkins(
            store, {"energy": round(energy), "fatigue": 3}, at, settings.tz, settings.boundaries
        )


def test_fewer_than_14_paired_days_say_so_without_a_number(store, settings):
    _history(store, settings, MIN_DAYS - 1, follows=True)
    doc = report(paired_history(store, settings))
    (vitality,) = [m for m in doc["meters"] if m["meter"] == "vitality"]
    energy = next(e for e in vitality["items"] if e["item"] == "energy")
    assert energy["rho"] is None and energy["ci95"] is None and energy["n"] == MIN_DAYS - 1
    assert "13 paired days so far; a number needs 14" in energy["sentence"]


def test_a_meter_that_follows_the_checkins_shows_it(store, settings):
    _history(store, settings, 40, follows=True)
    paired = paired_history(store, settings)
    # The meters were computed as of each check-in: the night before it, never a later one.
    assert len(paired.keys) == 40 and not np.isnan(paired.meters["vitality"]).any()
    doc = report(paired)
    vitality = next(m for m in doc["meters"] if m["meter"] == "vitality")
    energy = next(e for e in vitality["items"] if e["item"] == "energy")
    assert energy["rho"] > 0.8 and energy["n"] == 40
    assert energy["ci95"][0] <= energy["rho"] <= energy["ci95"][1]
    assert energy["inputs"]["sleep_duration"]["rho"] > 0.8
    assert energy["sentence"].startswith("Vitality follows your energy (rho")
    # A constant answer has no rank order to follow: no number.
    fatigue = next(e for e in vitality["items"] if e["item"] == "fatigue")
    assert fatigue["rho"] is None
