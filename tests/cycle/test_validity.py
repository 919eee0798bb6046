"""The validity report: meters as of each check-in, rho with an interval, the 14-day rule."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import numpy as np
from sqlmodel import select

from bridge.cycle.validity import paired_history, report
from bridge.intake.checkins import record_checkins
from bridge.store import upsert
from bridge.store.models import MeterSnapshot, Reading
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


def _resting(day: int, bpm: float) -> dict:
    at = START + timedelta(days=day)
    return {
        **_night(day, 0),
        "metric": "resting_hr",
        "start_utc": at,
        "end_utc": at,
        "value": bpm,
        "label": "",
    }


def _history(store, settings, days: int, follows: bool, by_heart: bool = False) -> None:
    rng = np.random.default_rng(3)
    minutes = rng.uniform(300, 540, days)
    bpm = rng.uniform(50, 70, days)
    with store.transaction() as s:
        upsert(
            s,
            Reading,
            [_night(d, m) for d, m in enumerate(minutes)]
            + [_resting(d, b) for d, b in enumerate(bpm)],
            keys=("source", "metric", "origin", "start_utc", "end_utc", "label"),
        )
    for d, m in enumerate(minutes):
        if by_heart:  # a lower resting heart rate, more energy; sleep says nothing
            energy = 1 + 4 * (70 - bpm[d]) / 20
        else:
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


def test_a_meter_that_follows_the_checkins_shows_it(store, settings, monkeypatch):
    from bridge.cycle import validity

    _history(store, settings, 40, follows=True)
    paired = paired_history(store, settings)
    # Read in chunks (bounded memory), the pairing is the same.
    monkeypatch.setattr(validity, "CHUNK_DAYS", 9)
    chunked = paired_history(store, settings)
    assert np.array_equal(chunked.meters["vitality"], paired.meters["vitality"], equal_nan=True)
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


def test_weights_fitted_to_a_person_are_used_only_while_they_track_better(
    store, settings, monkeypatch
):
    from bridge.cycle import validity
    from bridge.cycle.meters import person_weights, recompute_meters
    from mappings.validity import FitResult

    _history(store, settings, 60, follows=False, by_heart=True)
    verdicts = validity.fit_person(store, settings, date(2026, 11, 1))
    assert verdicts["vitality"]["used"] is True
    weights = person_weights(store, settings)
    assert "vitality" in weights.fitted and "+fit20261101" in weights.version
    assert weights.meters["vitality"]["resting_hr"] > 0.15  # toward what tracks them
    doc = validity.report(validity.paired_history(store, settings))
    assert next(m for m in doc["meters"] if m["meter"] == "vitality")["weights"] == "fitted to you"
    recompute_meters(store, settings, START + timedelta(days=61))
    with store.session() as s:
        snap = s.exec(select(MeterSnapshot).where(MeterSnapshot.vitality != None)).first()  # noqa: E711
    assert json.loads(snap.provenance)["vitality"]["weights"] == "fitted to you"
    assert snap.mapping_version == weights.version
    # The snapshot carries it, and its schema knows the field.
    from bridge.out.snapshot import build_snapshot
    from tests.helpers import validate_snapshot

    doc = build_snapshot(store, settings, START + timedelta(days=61))
    validate_snapshot(doc)

    # Later the forward check favours the bundled weights: the fit is dropped.
    worse = FitResult(np.array([0.1] * 8), 0.1, 0.3, 40)
    monkeypatch.setattr(validity, "forward_fit", lambda *a: worse)
    verdicts = validity.fit_person(store, settings, date(2026, 12, 1))
    assert verdicts["vitality"]["used"] is False
    assert person_weights(store, settings).fitted == frozenset()


def test_the_cycle_checks_the_fitted_weights_once_a_week(store, settings):
    from bridge.cycle.meters import person_weights
    from bridge.cycle.validity import recompute_with_refit, refit_if_due

    _history(store, settings, 20, follows=False, by_heart=True)
    assert refit_if_due(store, settings, date(2026, 11, 1)) is None  # 20 < 28 slots
    _history(store, settings, 60, follows=False, by_heart=True)
    assert recompute_with_refit(store, settings, START + timedelta(days=61)) > 0
    assert "vitality" in person_weights(store, settings).fitted
    today = (START + timedelta(days=61)).date()
    assert refit_if_due(store, settings, today + timedelta(days=6)) is None  # checked already
    assert refit_if_due(store, settings, today + timedelta(days=7)) is not None
