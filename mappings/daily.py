"""Daily features on the person's local days: one row per day, for people and notebooks.

The meters read the same building blocks per slot (`mappings.inputs`); this table is the
day-level view of them, e.g. `rhythm-bridge` users exploring their own data:

    from mappings.daily import daily_features
    table = daily_features(readings, tz=ZoneInfo("Europe/Berlin"))

Columns: the main sleep of the night ending that day (`sleep_*`, see `mappings.sleep`),
HRV per method and source (`hrv_sdnn:Apple Watch`, `hrv_rmssd:WHOOP`, never averaged
together), resting heart rate, de-duplicated steps, mean stress, recovery and Body Battery,
mindful and workout minutes. A day is a calendar day in the zone each record was measured
in; steps use the first slot boundary as the start of the day, like the slots do.
"""

from __future__ import annotations

from datetime import date, time, timedelta, tzinfo

import numpy as np
import pandas as pd

from mappings import sleep as sleep_features
from mappings import steps as step_features
from mappings.frames import NS_PER_MIN, Readings, epoch_day
from mappings.slots import DEFAULT_BOUNDARIES

EPOCH = date(1970, 1, 1)
MEAN_METRICS = ("resting_hr", "stress", "recovery", "body_battery")
SLEEP_COLUMNS = (
    "asleep_min",
    "in_bed_min",
    "efficiency",
    "deep_share",
    "rem_share",
    "midpoint_min",
    "regularity_min",
    "nap_min",
)
SUM_METRICS = {"mindful": "mindful_min", "workout": "workout_min"}


def daily_features(
    readings: pd.DataFrame,
    *,
    tz: tzinfo,
    boundaries: tuple[time, ...] = DEFAULT_BOUNDARIES,
    step_priority: tuple[str, ...] = ("watch", "phone"),
) -> pd.DataFrame:
    """One row per local date (a `datetime.date` index) with every daily feature."""
    r = Readings(readings, tz)
    columns: dict[str, pd.Series] = {}
    night = sleep_features.nightly(r)
    for col in SLEEP_COLUMNS:
        columns[f"sleep_{col}"] = night[col].astype(float)
    for metric in ("hrv_sdnn", "hrv_rmssd", *MEAN_METRICS):
        frame = r.metric(metric)
        frame = (
            frame[frame["value"] > 0] if metric.startswith("hrv") else frame[frame["value"] >= 0]
        )
        day = epoch_day(frame["local_end"].to_numpy())
        if metric.startswith("hrv"):  # per source: the method and the device both matter
            for origin, group in frame.groupby("origin", sort=True):
                g_day = epoch_day(group["local_end"].to_numpy())
                columns[f"{metric}:{origin or 'unknown'}"] = group["value"].groupby(g_day).mean()
        elif len(frame):
            columns[metric] = frame["value"].groupby(day).mean()
    resolved = step_features.resolve(r, step_priority)
    start_ns = (boundaries[0].hour * 60 + boundaries[0].minute) * NS_PER_MIN
    columns["steps"] = step_features.daily_totals(resolved, start_ns)
    for metric, name in SUM_METRICS.items():
        frame = r.metric(metric)
        if len(frame):
            minutes = frame["value"].to_numpy(dtype=float)
            span = (frame["end"].to_numpy() - frame["start"].to_numpy()) / NS_PER_MIN
            minutes = np.clip(np.where(np.isnan(minutes), span, minutes), 0.0, None)
            columns[name] = (
                pd.Series(minutes).groupby(epoch_day(frame["local_end"].to_numpy())).sum()
            )
    table = pd.DataFrame({k: v for k, v in columns.items() if len(v)})
    if table.empty:
        return table
    table = table.sort_index()
    table.index = [EPOCH + timedelta(days=int(d)) for d in table.index]
    table.index.name = "local_date"
    return table


def baseline_band(daily: pd.Series, signal: str) -> pd.DataFrame:
    """The personal baseline the meters compare a signal with, per day of `daily` (a
    date-indexed mean per day): columns center, low, high (centre -/+ one spread, on the
    signal's own scale), NaN before the baseline has any history."""
    from mappings.baselines import BaselineRule, rolling_baseline
    from mappings.signals import SIGNALS

    sig = next(s for s in SIGNALS if s.name == signal)
    rule = BaselineRule(log=sig.log, spread_floor=sig.spread_floor)
    clean = daily.dropna()
    if clean.empty:
        return pd.DataFrame(columns=["center", "low", "high"], dtype=float)
    days = pd.Index([(d - EPOCH).days for d in clean.index])
    series = pd.Series(clean.to_numpy(dtype=float), index=days)
    base = rolling_baseline(series, rule, int(days.max()))
    center, spread, seen = base.at(days.to_numpy())
    center = np.where(seen >= rule.min_days, center, np.nan)
    low, high = center - spread, center + spread
    if rule.log:
        center, low, high = np.exp(center), np.exp(low), np.exp(high)
    return pd.DataFrame({"center": center, "low": low, "high": high}, index=clean.index)


def calendar_hours(
    events: pd.DataFrame, *, tz: tzinfo, boundaries: tuple[time, ...] = DEFAULT_BOUNDARIES
) -> pd.Series:
    """Busy hours per local day (date index): timed, confirmed, opaque events by the day
    they start on (a day starts at the first slot boundary, like the slots)."""
    from mappings.frames import Events

    table = Events(events).table
    if table.empty:
        return pd.Series(dtype=float)
    table = table[table["busy"] & ~table["all_day"]]
    start = pd.DatetimeIndex(table["start"].to_numpy().astype("datetime64[ns]"), tz="UTC")
    local = start.tz_convert(tz).tz_localize(None) - pd.Timedelta(
        hours=boundaries[0].hour, minutes=boundaries[0].minute
    )
    hours = (table["end"].to_numpy() - table["start"].to_numpy()) / (60 * NS_PER_MIN)
    out = pd.Series(np.clip(hours, 0, 24), index=local.date).groupby(level=0).sum()
    out.index.name = "local_date"
    return out
