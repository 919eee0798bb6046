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
