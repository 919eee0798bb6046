"""Simulated calendars: work weeks with meetings, mostly free evenings, weekends.

Each slot of a simulated person's month gets busy intervals (minutes from the slot's
start); what the runner sees of them is what the pipeline computes from a real calendar:
the longest free stretch (`free_minutes`), the actions a stretch is long enough for
(`available_actions`) and the action already scheduled there (`active_event`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mappings.actions import ACTIONS
from mappings.free_windows import DEFAULT_MIN_MINUTES

# Minutes per slot with the default boundaries 05:00, 12:00, 17:00, 22:00.
SLOT_MINUTES = (420, 300, 300, 420)
WORK_FROM = (180, 0)  # meetings start from 08:00 in the morning, any time after noon
MEETING_LENGTHS = (30, 30, 45, 60, 60, 90)
GRID = 15  # meetings start on the quarter hour
# What an event outside working hours is, by slot: a run or a class, a visit, a dinner.
OFF_WORK = (
    ("EXERCISE", "FAMILY_TIME", "LEARN"),
    ("SOCIALIZE", "FAMILY_TIME", "EXERCISE"),
    ("FAMILY_TIME", "SOCIALIZE", "EXERCISE", "LEARN"),
)
Interval = tuple[int, int]


@dataclass(frozen=True)
class SlotCalendar:
    free_minutes: int
    active_event: str | None

    def available(self, need: dict[str, int] = DEFAULT_MIN_MINUTES) -> list[str]:
        return [a for a in ACTIONS if self.free_minutes >= need[a]]

    def fits(self, action: str, need: dict[str, int] = DEFAULT_MIN_MINUTES) -> bool:
        return self.free_minutes >= need[action]


FREE = SlotCalendar(free_minutes=420, active_event=None)


def _longest_gap(length: int, busy: list[Interval]) -> int:
    cursor, best = 0, 0
    for start, end in sorted(busy):
        if start > cursor:
            best = max(best, start - cursor)
        cursor = max(cursor, end)
    return max(best, length - cursor)


def month(seed: int, slots: int) -> list[SlotCalendar]:
    """One simulated person's calendar, slot by slot (slot t is day t // 4, Monday first).

    The person has a meeting load (meetings per working half-day) and a chance of a fully
    booked half-day (workshops, on-call, travel); evenings and weekends hold the odd
    family or social event.
    """
    rng = np.random.default_rng([seed, 11])
    load = rng.uniform(0.5, 4.0)
    booked_share = rng.uniform(0.0, 0.25)
    out = []
    for t in range(slots):
        day, slot = (t // 4) % 7, t % 4
        length = SLOT_MINUTES[slot]
        busy: list[Interval] = []
        active = None
        if day < 5 and slot < 2:
            if rng.random() < booked_share:
                busy.append((WORK_FROM[slot], length))
            for _ in range(int(rng.poisson(load))):
                dur = int(rng.choice(MEETING_LENGTHS))
                lo = WORK_FROM[slot]
                start = lo + GRID * int(rng.integers(0, max(1, (length - lo - dur) // GRID + 1)))
                busy.append((start, min(length, start + dur)))
            active = "ADMIN_WORK" if busy else None  # meetings are classified as admin work
        elif slot < 3 and rng.random() < (0.35 if day >= 5 else 0.2 if slot == 2 else 0.0):
            dur = int(rng.integers(4, 13)) * GRID
            start = GRID * int(rng.integers(0, (length - dur) // GRID + 1))
            busy.append((start, start + dur))
            active = str(rng.choice(OFF_WORK[slot]))
        out.append(SlotCalendar(_longest_gap(length, busy), active))
    return out
