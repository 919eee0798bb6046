"""Nightly sleep features per wake day: duration, stages, efficiency, midpoint, regularity.

Sleep records from every source are grouped into sessions (records closer than an hour
belong together). A session belongs to the local day its last record ends on, in the zone
it was measured in, so a night crossing midnight, a DST night and a night abroad all land
on the day the person woke up. The day's main sleep is its longest session that is not a
nap (under 3 hours asleep, starting between 09:00 and 20:00 local); naps are reported
apart. Overlapping sources are merged, not summed: asleep minutes are the union of every
source's asleep intervals, and stage shares come from the one source with the most staged
minutes that night, never a blend of two devices' stagings.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mappings.frames import NS_PER_DAY, NS_PER_HOUR, NS_PER_MIN, Readings, epoch_day
from mappings.intervals import merge, union_length

ASLEEP = ("asleep", "core", "deep", "rem")
STAGES = ("core", "deep", "rem")
SESSION_GAP = 60 * NS_PER_MIN
NAP_MAX_ASLEEP_MIN = 180
NAP_HOURS = (9, 20)  # a short sleep starting in this local window is a nap
REGULARITY_NIGHTS = 14

COLUMNS = [
    "start",
    "end",
    "asleep_min",
    "in_bed_min",
    "efficiency",
    "deep_min",
    "rem_min",
    "core_min",
    "deep_share",
    "rem_share",
    "staged",
    "confidence",
    "midpoint_min",
    "regularity_min",
    "nap_min",
    "stage_origin",
]


def _empty() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=float) for c in COLUMNS})


def sessions(readings: Readings) -> pd.DataFrame:
    """Every sleep session (all sources merged) with its features, one row per session."""
    s = readings.metric("sleep")
    s = s[s["end"] > s["start"]]  # an instant says nothing about sleep
    if s.empty:
        return _empty()
    start, end = s["start"].to_numpy(), s["end"].to_numpy()
    zeros = np.zeros(len(s), dtype=np.int64)
    _, ses_s, ses_e = merge(zeros, start, end, gap=SESSION_GAP)
    if len(ses_s) == 0:
        return _empty()
    sid = np.searchsorted(ses_s, start, side="right") - 1
    rec = s.assign(session=sid)
    last = (
        rec.sort_values(["session", "end", "local_end"], kind="stable").groupby("session").tail(1)
    )
    local_end = pd.Series(last["local_end"].to_numpy(), index=last["session"].to_numpy())
    out = pd.DataFrame({"start": ses_s, "end": ses_e}, index=np.arange(len(ses_s)))
    out["local_end"] = local_end.reindex(out.index).to_numpy()
    sid_all = rec["session"].to_numpy()
    in_bed = union_length(sid_all, start, end)
    asleep_mask = rec["label"].isin(ASLEEP).to_numpy()
    asleep = union_length(sid_all[asleep_mask], start[asleep_mask], end[asleep_mask])
    out["in_bed_min"] = in_bed.reindex(out.index).fillna(0).to_numpy() / NS_PER_MIN
    out["asleep_min"] = asleep.reindex(out.index).fillna(0).to_numpy() / NS_PER_MIN
    out["confidence"] = 0.8
    estimated = out["asleep_min"] <= 0
    # Only "in bed" known: an estimate, trusted less.
    out.loc[estimated, "asleep_min"] = out.loc[estimated, "in_bed_min"] * 0.9
    out.loc[estimated, "confidence"] = 0.5
    out["efficiency"] = np.where(
        estimated, np.nan, out["asleep_min"] / out["in_bed_min"].clip(lower=1e-9)
    )
    _stages(rec, out)
    out.loc[out["staged"], "confidence"] = 1.0
    # The midpoint is of the time asleep (onset to final wake), not of the time in bed.
    sleeping = rec[asleep_mask].groupby("session").agg(onset=("start", "min"), wake=("end", "max"))
    onset = sleeping["onset"].reindex(out.index).fillna(out["start"]).to_numpy(dtype=np.int64)
    wake = sleeping["wake"].reindex(out.index).fillna(out["end"]).to_numpy(dtype=np.int64)
    local_mid = out["local_end"].to_numpy() - (out["end"].to_numpy() - (onset + wake) // 2)
    # Minutes since the local noon before: midnight is 720, 03:00 is 900.
    out["midpoint_min"] = ((local_mid - 12 * NS_PER_HOUR) % NS_PER_DAY) / NS_PER_MIN
    out["wake_day"] = epoch_day(out["local_end"].to_numpy())
    start_hour = (
        (out["local_end"].to_numpy() - (out["end"] - out["start"]).to_numpy()) % NS_PER_DAY
    ) / NS_PER_HOUR
    out["nap"] = (out["asleep_min"] < NAP_MAX_ASLEEP_MIN).to_numpy() & (
        (start_hour >= NAP_HOURS[0]) & (start_hour < NAP_HOURS[1])
    )
    return out


def _stages(rec: pd.DataFrame, out: pd.DataFrame) -> None:
    """Stage minutes and shares of each session, from its best-staged source."""
    st = rec[rec["label"].isin(STAGES)]
    for col in ("deep_min", "rem_min", "core_min", "deep_share", "rem_share"):
        out[col] = np.nan
    out["staged"] = False
    out["stage_origin"] = ""
    if st.empty:
        return
    # Per (session, origin) pair and stage: the union of its intervals, in minutes.
    pair, pairs = pd.factorize(
        pd.MultiIndex.from_arrays([st["session"].to_numpy(), st["origin"].to_numpy()])
    )
    stage = pd.Index(STAGES).get_indexer(st["label"].to_numpy())
    lengths = union_length(pair * len(STAGES) + stage, st["start"].to_numpy(), st["end"].to_numpy())
    minutes = np.zeros(len(pairs) * len(STAGES))
    minutes[lengths.index.to_numpy()] = lengths.to_numpy() / NS_PER_MIN
    minutes = minutes.reshape(len(pairs), len(STAGES))
    table = pd.DataFrame(minutes, columns=list(STAGES))
    table["session"] = pairs.get_level_values(0).to_numpy()
    table["origin"] = pairs.get_level_values(1).to_numpy()
    table["total"] = minutes.sum(axis=1)
    table = table.sort_values(["session", "total", "origin"], ascending=[True, False, True])
    best = table.groupby("session").head(1).set_index("session")
    idx = best.index.to_numpy()
    total = best["total"].clip(lower=1e-9).to_numpy()
    out.loc[idx, "deep_min"] = best["deep"].to_numpy()
    out.loc[idx, "rem_min"] = best["rem"].to_numpy()
    out.loc[idx, "core_min"] = best["core"].to_numpy()
    out.loc[idx, "deep_share"] = best["deep"].to_numpy() / total
    out.loc[idx, "rem_share"] = best["rem"].to_numpy() / total
    out.loc[idx, "staged"] = True
    out.loc[idx, "stage_origin"] = best["origin"].to_numpy()


def nightly(readings: Readings) -> pd.DataFrame:
    """The main sleep of each wake day (epoch-day index), naps summed apart, regularity."""
    ses = sessions(readings)
    if ses.empty:
        return _empty()
    naps = ses[ses["nap"]].groupby("wake_day")["asleep_min"].sum()
    main = ses[~ses["nap"]].sort_values(
        ["wake_day", "asleep_min", "end"], ascending=[True, False, True]
    )
    main = main.groupby("wake_day").head(1).set_index("wake_day").sort_index()
    if main.empty:  # only naps
        return _empty()
    main["nap_min"] = naps.reindex(main.index).fillna(0.0)
    mid = main["midpoint_min"].reindex(range(int(main.index.min()), int(main.index.max()) + 1))
    usual = mid.shift(1).rolling(REGULARITY_NIGHTS, min_periods=3).median()
    main["regularity_min"] = (main["midpoint_min"] - usual.reindex(main.index)).abs()
    return main[COLUMNS]
