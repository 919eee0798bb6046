"""The history page's data (and /api/history's): one flat row per day, or per week over long
ranges, with each meter's mean and the range of its slots, the inputs behind them, and the
answers given. Flat rows so Grafana or Home Assistant can chart them as they come."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from typing import Any

import pandas as pd
from sqlalchemy import select
from sqlmodel import col

from bridge.config import Settings
from bridge.errors import InputError
from bridge.out.history import stored_range
from bridge.store import Store
from bridge.store.models import Feedback, MeterSnapshot, Recommendation
from mappings.actions import METERS
from mappings.slots import SLOT_NAMES, day_bounds

RANGES: dict[str, int | None] = {"4w": 28, "3m": 91, "1y": 365, "all": None}
RANGE_LABELS = {"4w": "4 weeks", "3m": "3 months", "1y": "1 year", "all": "all"}
DEFAULT_RANGE = "3m"
WEEKLY_AFTER_DAYS = 400  # longer ranges are drawn (and served) per ISO week
BASELINE_DAYS = 63  # the baseline bands look this far back before the first day
INPUT_KEYS = (
    "sleep_hours",
    "deep_share",
    "rem_share",
    "hrv_ms",
    "hrv_baseline",
    "hrv_low",
    "hrv_high",
    "resting_hr",
    "resting_hr_baseline",
    "resting_hr_low",
    "resting_hr_high",
    "steps",
    "stress",
    "calendar_hours",
)


def resolve_range(
    settings: Settings, store: Store, now: datetime, *, name: str | None, first: Any, last: Any
) -> tuple[str, date, date]:
    """(range name, first day, last day) from `range=` or `from=`/`to=` (ISO dates)."""
    from bridge.clock import current_slot

    today = current_slot(settings, now).local_date
    if first or last:
        try:
            lo = date.fromisoformat(first) if first else None
            hi = date.fromisoformat(last) if last else today
        except ValueError:
            raise InputError("from/to: use YYYY-MM-DD") from None
        lo = lo or hi - timedelta(days=RANGES[DEFAULT_RANGE] - 1)  # type: ignore[operator]
        if lo > hi:
            raise InputError(f"from {lo} is after to {hi}")
        if lo.year < 1970 or hi.year > 2100:
            raise InputError("from/to: use dates between 1970 and 2100")
        return "custom", lo, hi
    chosen, name = name, name or DEFAULT_RANGE
    if name not in RANGES:
        raise InputError(f"range: use one of {', '.join(RANGES)}")
    days = RANGES[name]
    if days is not None and chosen is not None:
        return name, today - timedelta(days=days - 1), today
    # "all", and the default: from where the data is dense, not from a few stray old
    # records (bridge.cycle.meters.first_data_day), nor months before the first data.
    start = dense_start(store, settings, now)
    if days is None:
        return name, start or today, today
    lo = today - timedelta(days=days - 1)
    return name, min(max(lo, start or lo), today), today


def dense_start(store: Store, settings: Settings, now: datetime) -> date | None:
    """The first day with stored meters, at or after where the data becomes dense."""
    from bridge.cycle.meters import first_data_day

    span = stored_range(store)
    if span is None:
        return None
    dense = first_data_day(store, settings, now)
    return max(span[0], dense) if dense and dense <= span[1] else span[0]


def history(
    store: Store,
    settings: Settings,
    now: datetime,
    *,
    range_name: str | None = None,
    first: str | None = None,
    last: str | None = None,
) -> dict[str, Any]:
    name, lo, hi = resolve_range(settings, store, now, name=range_name, first=first, last=last)
    days = pd.date_range(lo, hi, freq="D").date
    table = pd.DataFrame(index=pd.Index(days, name="date"))
    table = table.join(_meter_days(store, lo, hi)).join(_input_days(store, settings, lo, hi))
    weekly = len(days) > WEEKLY_AFTER_DAYS
    if weekly:
        table = _weekly(table)
    span = stored_range(store)
    return {
        "range": name,
        "from": lo.isoformat(),
        "to": hi.isoformat(),
        "bin": "week" if weekly else "day",
        "stored": {"from": span[0].isoformat(), "to": span[1].isoformat()} if span else None,
        "stale_after_hours": settings.meters.stale_after_hours,
        "rows": _records(table),
        "answers": _answers(store, lo, hi),
    }


def _meter_days(store: Store, lo: date, hi: date) -> pd.DataFrame:
    with store.session() as session:
        found = session.execute(
            select(
                col(MeterSnapshot.local_date),
                col(MeterSnapshot.slot),
                col(MeterSnapshot.provenance),
                *(getattr(MeterSnapshot, m) for m in METERS),
                *(getattr(MeterSnapshot, f"{m}_confidence") for m in METERS),
            ).where(col(MeterSnapshot.local_date) >= lo, col(MeterSnapshot.local_date) <= hi)
        ).all()
    if not found:
        return pd.DataFrame(index=pd.Index([], name="date"))
    n = len(METERS)
    rows = []
    for row in found:
        prov = json.loads(row[2] or "{}")
        rec: dict[str, Any] = {"date": row[0], "slot": row[1]}
        for i, m in enumerate(METERS):
            rec[m] = row[3 + i]
            rec[f"{m}_confidence"] = row[3 + n + i]
            fresh = prov.get(m, {}).get("freshness") or {}
            rec[f"{m}_stale"] = fresh.get("stale")
        rows.append(rec)
    frame = pd.DataFrame(rows).sort_values(["date", "slot"])
    grouped = frame.groupby("date")
    out = {}
    for m in METERS:
        values = grouped[m]
        out[m] = values.mean()
        out[f"{m}_min"] = values.min()
        out[f"{m}_max"] = values.max()
        out[f"{m}_confidence"] = grouped[f"{m}_confidence"].mean()
        # The day's last slot with a value says whether its data had gone stale.
        with_value = frame[frame[m].notna()]
        out[f"{m}_stale"] = with_value.groupby("date")[f"{m}_stale"].last()
    return pd.DataFrame(out)


def _input_days(store: Store, settings: Settings, lo: date, hi: date) -> pd.DataFrame:
    from bridge.cycle.meters import load_frames, meter_weights
    from mappings.daily import baseline_band, calendar_hours, daily_features

    tz, bounds = settings.tz, settings.boundaries
    start = day_bounds(lo, tz, bounds)[0] - timedelta(days=BASELINE_DAYS)
    end = day_bounds(hi, tz, bounds)[1]
    readings, events = load_frames(store, start, end)
    weights = meter_weights(settings)
    daily = daily_features(readings, tz=tz, boundaries=bounds, step_priority=weights.step_priority)
    out: dict[str, pd.Series] = {}
    if len(daily):
        if "sleep_asleep_min" in daily:
            out["sleep_hours"] = daily["sleep_asleep_min"] / 60
            out["deep_share"] = daily["sleep_deep_share"]
            out["rem_share"] = daily["sleep_rem_share"]
        # HRV: the source with the most days (SDNN and RMSSD are never mixed).
        hrv = [c for c in daily.columns if c.startswith(("hrv_sdnn:", "hrv_rmssd:"))]
        if hrv:
            main = max(hrv, key=lambda c: (daily[c].notna().sum(), c))
            out.update(_with_band("hrv_ms", "hrv", daily[main], baseline_band))
        if "resting_hr" in daily:
            out.update(_with_band("resting_hr", "resting_hr", daily["resting_hr"], baseline_band))
        for col in ("steps", "stress"):
            if col in daily:
                out[col] = daily[col]
    hours = calendar_hours(events, tz=tz, boundaries=bounds)
    if len(hours):
        out["calendar_hours"] = hours
    frame = pd.DataFrame(out)
    return frame[(frame.index >= lo) & (frame.index <= hi)] if len(frame) else frame


def _with_band(key: str, signal: str, series: pd.Series, band: Any) -> dict[str, pd.Series]:
    b = band(series, signal)
    return {
        key: series,
        f"{key.removesuffix('_ms')}_baseline": b["center"],
        f"{key.removesuffix('_ms')}_low": b["low"],
        f"{key.removesuffix('_ms')}_high": b["high"],
    }


def _weekly(table: pd.DataFrame) -> pd.DataFrame:
    """ISO weeks (labelled by their Monday): means, and the lowest/highest of the ranges."""
    monday = [d - timedelta(days=d.weekday()) for d in table.index]
    grouped = table.groupby(pd.Index(monday, name="date"))
    parts = {}
    for column in table.columns:
        if column.endswith("_min") or column.endswith("_low"):
            parts[column] = grouped[column].min()
        elif column.endswith("_max") or column.endswith("_high"):
            parts[column] = grouped[column].max()
        elif column.endswith("_stale"):
            parts[column] = grouped[column].last()
        else:
            parts[column] = grouped[column].mean()
    return pd.DataFrame(parts)


def _records(table: pd.DataFrame) -> list[dict[str, Any]]:
    keys = [
        *(k for m in METERS for k in (m, f"{m}_min", f"{m}_max", f"{m}_confidence", f"{m}_stale")),
        *INPUT_KEYS,
    ]
    out = []
    for day, row in table.iterrows():
        rec: dict[str, Any] = {"date": day.isoformat()}
        for k in keys:
            v = row.get(k)
            if k.endswith("_stale"):
                rec[k] = None if v is None or v != v else bool(v)
            elif v is None or v != v:
                rec[k] = None
            else:
                rec[k] = round(float(v), 1 if k in ("steps", "hrv_ms") else 3)
        out.append(rec)
    return out


def _answers(store: Store, lo: date, hi: date) -> list[dict[str, Any]]:
    with store.session() as session:
        found = session.execute(
            select(Recommendation, Feedback)
            .join(Feedback, col(Feedback.recommendation_id) == col(Recommendation.id))
            .where(col(Recommendation.local_date) >= lo, col(Recommendation.local_date) <= hi)
            .order_by(col(Recommendation.local_date), col(Recommendation.slot))
        ).all()
    return [
        {
            "date": rec.local_date.isoformat(),
            "slot": rec.slot,
            "slot_name": SLOT_NAMES[rec.slot],
            "action": rec.action,
            "response": fb.response,
        }
        for rec, fb in found
    ]
