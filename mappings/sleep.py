"""Nightly sleep features per wake day: duration, stages, efficiency, midpoint, regularity.

Sleep records from every source are grouped into sessions (records closer than an hour
belong together). A session belongs to the local day its last record ends on, in the zone
it was measured in, so a night crossing midnight, a DST night and a night abroad all land
on the day the person woke up (a sleep ending after 18:00 counts for the next day: an
early night that ended before midnight is still the next morning's night). The day's main
sleep is its longest session that is not a nap (under 3 hours asleep, starting between
09:00 and 20:00 local); naps are reported apart. Overlapping sources are merged, not
summed: asleep minutes are the union of every source's asleep intervals, and stage shares
come from the one source with the most staged minutes that night, never a blend of two
devices' stagings.
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
EARLY_NIGHT_SHIFT = 6 * NS_PER_HOUR

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


def _per_session(sid: np.ndarray, n: int, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Minutes covered per session by the union of the given intervals."""
    out = np.zeros(n)
    lengths = union_length(sid, s, e)
    out[lengths.index.to_numpy()] = lengths.to_numpy() / NS_PER_MIN
    return out


def sessions(readings: Readings) -> pd.DataFrame:
    """Every sleep session (all sources merged) with its features, one row per session."""
    s = readings.metric("sleep")
    s = s[s["end"] > s["start"]]  # an instant says nothing about sleep
    if s.empty:
        return _empty()
    start, end = s["start"].to_numpy(), s["end"].to_numpy()
    local, label = s["local_end"].to_numpy(), s["label"].to_numpy()
    _, ses_s, ses_e = merge(np.zeros(len(s), dtype=np.int64), start, end, gap=SESSION_GAP)
    n = len(ses_s)
    sid = np.searchsorted(ses_s, start, side="right") - 1
    # Each session's local end: that of its last-ending record (in that record's zone).
    order = np.lexsort((local, end, sid))
    last = order[np.r_[sid[order][1:] != sid[order][:-1], True]]
    local_end = local[last]
    in_bed = _per_session(sid, n, start, end)
    is_asleep = np.isin(label, ASLEEP)
    asleep = _per_session(sid[is_asleep], n, start[is_asleep], end[is_asleep])
    # Only "in bed" known: an estimate, trusted less.
    estimated = asleep <= 0
    asleep = np.where(estimated, in_bed * 0.9, asleep)
    confidence = np.where(estimated, 0.5, 0.8)
    efficiency = np.where(estimated, np.nan, asleep / np.maximum(in_bed, 1e-9))
    # The midpoint is of the time asleep (onset to final wake), not of the time in bed.
    onset, wake = ses_s.copy(), ses_e.copy()
    if is_asleep.any():
        lo = np.full(n, np.iinfo(np.int64).max)
        hi = np.full(n, np.iinfo(np.int64).min)
        np.minimum.at(lo, sid[is_asleep], start[is_asleep])
        np.maximum.at(hi, sid[is_asleep], end[is_asleep])
        seen = hi > np.iinfo(np.int64).min
        onset, wake = np.where(seen, lo, onset), np.where(seen, hi, wake)
    local_mid = local_end - (ses_e - (onset + wake) // 2)
    local_start = local_end - (ses_e - ses_s)
    start_hour = (local_start % NS_PER_DAY) / NS_PER_HOUR
    out = pd.DataFrame(
        {
            "start": ses_s,
            "end": ses_e,
            "local_end": local_end,
            "in_bed_min": in_bed,
            "asleep_min": asleep,
            "efficiency": efficiency,
            "confidence": confidence,
            # Minutes since the local noon before: midnight is 720, 03:00 is 900.
            "midpoint_min": ((local_mid - 12 * NS_PER_HOUR) % NS_PER_DAY) / NS_PER_MIN,
            # A session ending after 18:00 was an early night: it counts for the next day.
            "wake_day": epoch_day(local_end + EARLY_NIGHT_SHIFT),
            "nap": (asleep < NAP_MAX_ASLEEP_MIN)
            & (start_hour >= NAP_HOURS[0])
            & (start_hour < NAP_HOURS[1]),
        }
    )
    _stages(s, sid, out)
    return out


def _stages(s: pd.DataFrame, sid: np.ndarray, out: pd.DataFrame) -> None:
    """Stage minutes and shares of each session, from its best-staged source."""
    n = len(out)
    cols = {c: np.full(n, np.nan) for c in ("deep_min", "rem_min", "core_min")}
    staged = np.zeros(n, dtype=bool)
    origin = np.full(n, "", dtype=object)
    is_stage = s["label"].isin(STAGES).to_numpy()
    if is_stage.any():
        st_sid = sid[is_stage]
        st_origin = s["origin"].to_numpy()[is_stage]
        # Per (session, origin) pair and stage: the union of its intervals, in minutes.
        origin_code, origin_names = pd.factorize(st_origin, sort=True)
        pair = st_sid * len(origin_names) + origin_code
        pairs, pair_idx = np.unique(pair, return_inverse=True)
        stage = pd.Index(STAGES).get_indexer(s["label"].to_numpy()[is_stage])
        lengths = union_length(
            pair_idx * len(STAGES) + stage,
            s["start"].to_numpy()[is_stage],
            s["end"].to_numpy()[is_stage],
        )
        flat = np.zeros(len(pairs) * len(STAGES))
        flat[lengths.index.to_numpy()] = lengths.to_numpy() / NS_PER_MIN
        minutes = flat.reshape(len(pairs), len(STAGES))
        total = minutes.sum(axis=1)
        p_sid, p_origin = pairs // len(origin_names), pairs % len(origin_names)
        # Best per session: most staged minutes, then the first origin by name.
        order = np.lexsort((p_origin, -total, p_sid))
        best = order[np.r_[True, p_sid[order][1:] != p_sid[order][:-1]]]
        where = p_sid[best]
        for i, c in enumerate(STAGES):
            cols[f"{c}_min"][where] = minutes[best, i]
        staged[where] = True
        origin[where] = np.asarray(origin_names)[p_origin[best]]
    out["deep_min"], out["rem_min"], out["core_min"] = (
        cols["deep_min"],
        cols["rem_min"],
        cols["core_min"],
    )
    staged_total = out["deep_min"] + out["rem_min"] + out["core_min"]
    out["deep_share"] = out["deep_min"] / staged_total.clip(lower=1e-9)
    out["rem_share"] = out["rem_min"] / staged_total.clip(lower=1e-9)
    out["staged"] = staged
    out["stage_origin"] = origin
    out.loc[staged, "confidence"] = 1.0


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
