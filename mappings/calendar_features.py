"""Calendar features per slot: how full it is, how many meetings, how long without a
break, focus time, social and family events of the past week, how close a deadline is.

Everything is computed for many slots at once with sorted arrays and searchsorted.
Events that do not block time (transparent, all-day) never count as busy; cancelled events
are gone before this point; NOT_AN_ACTION markers count only as deadline hints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from mappings.frames import NS_PER_DAY, NS_PER_MIN, Events
from mappings.intervals import Coverage

SOCIAL = ("SOCIALIZE", "FAMILY_TIME")
NOT_MEETINGS = (
    "SOCIALIZE",
    "FAMILY_TIME",
    "EXERCISE",
    "MEDITATE",
    "ME_TIME",
    "SLEEP",
    "BINGE_WATCH",
)
BREAK_MIN = 15  # a gap shorter than this between busy events is not a break
DEADLINE_HORIZON_DAYS = 7


@dataclass(frozen=True)
class CalendarRules:
    focus_credit: dict[str, float]  # action -> how much of its time counts as focus
    deadline_pattern: re.Pattern[str]


@dataclass
class SlotWindows:
    """The instants (int64 ns UTC) that define each slot's windows."""

    day_lo: np.ndarray
    slot_lo: np.ndarray
    slot_hi: np.ndarray
    as_of: np.ndarray


class CalendarFeatures:
    def __init__(self, events: Events, rules: CalendarRules) -> None:
        t = events.table
        self.any_start = np.sort(t["start"].to_numpy())
        self.any_end = np.sort(t["end"].to_numpy())
        start, end = t["start"].to_numpy(), t["end"].to_numpy()
        action, attendees = t["action"].to_numpy(), t["attendees"].to_numpy()
        timed = (action != "NOT_AN_ACTION") & ~t["all_day"].to_numpy(dtype=bool)
        busy = timed & t["busy"].to_numpy(dtype=bool)
        self.busy = Coverage(start[busy], end[busy])
        blocks = Coverage(start[busy], end[busy], gap=BREAK_MIN * NS_PER_MIN)
        self.block_s, self.block_e = blocks.s, blocks.e
        meeting = busy & (attendees >= 2) & ~np.isin(action, NOT_MEETINGS)
        self.meet_start, self.meet_end = np.sort(start[meeting]), np.sort(end[meeting])
        self.focus = {
            act: Coverage(start[timed & (action == act)], end[timed & (action == act)])
            for act in rules.focus_credit
        }
        self.credit = rules.focus_credit
        social = (action != "NOT_AN_ACTION") & np.isin(action, SOCIAL)
        self.social_start = np.sort(start[social])
        unique, codes = np.unique(t["title"].astype(str).to_numpy(), return_inverse=True)
        is_deadline = np.array([bool(rules.deadline_pattern.search(x)) for x in unique], bool)
        hits = t[is_deadline[codes]] if len(t) else t
        # An all-day deadline is due at the end of its day; a timed one at its start.
        due = np.where(
            hits["all_day"].to_numpy(dtype=bool), hits["end"].to_numpy(), hits["start"].to_numpy()
        )
        self.due = np.sort(due)

    def has_calendar(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Any (non-cancelled) event overlapping [lo, hi)."""
        return self._overlapping(self.any_start, self.any_end, lo, hi) > 0

    @staticmethod
    def _overlapping(
        starts: np.ndarray, ends: np.ndarray, lo: np.ndarray, hi: np.ndarray
    ) -> np.ndarray:
        # #{start < hi and end > lo} = #{start < hi} - #{end <= lo}, as end >= start.
        return np.searchsorted(starts, hi, side="left") - np.searchsorted(ends, lo, side="right")

    def busy_share(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        span = np.maximum(hi - lo, 1)
        return np.where(hi > lo, self.busy.covered(lo, hi) / span, np.nan)

    def meetings(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return self._overlapping(self.meet_start, self.meet_end, lo, hi).astype(float)

    def longest_stretch_min(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Longest run of busy time without a 15-minute break inside each [lo, hi)."""
        out = np.zeros(len(lo))
        first = np.searchsorted(self.block_e, lo, side="right")
        last = np.searchsorted(self.block_s, hi, side="left")
        for i in np.flatnonzero(last > first):
            a, b = first[i], last[i]
            seg = np.minimum(self.block_e[a:b], hi[i]) - np.maximum(self.block_s[a:b], lo[i])
            out[i] = seg.max() / NS_PER_MIN
        return out

    def focus_min(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        total = np.zeros(len(lo))
        for action, credit in self.credit.items():
            total += credit * self.focus[action].covered(lo, hi) / NS_PER_MIN
        return total

    def social_events(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Social and family events starting in [lo, hi)."""
        return (
            np.searchsorted(self.social_start, hi, side="left")
            - np.searchsorted(self.social_start, lo, side="left")
        ).astype(float)

    def days_to_deadline(self, at: np.ndarray) -> np.ndarray:
        """Days from each instant to the next deadline due at or after it (NaN if none soon)."""
        k = np.searchsorted(self.due, at, side="left")
        has = k < len(self.due)
        days = (
            np.where(
                has, (self.due[np.minimum(k, max(len(self.due) - 1, 0))] - at) / NS_PER_DAY, np.nan
            )
            if len(self.due)
            else np.full(len(at), np.nan)
        )
        return np.where(days <= DEADLINE_HORIZON_DAYS, days, np.nan)
