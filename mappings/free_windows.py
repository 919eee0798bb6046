"""Busy blocks and free windows: when in a slot the person can actually do something.

Pure functions over event fields (as the store keeps them) and aware datetimes; the cycle
reads the events and passes them in.

An event blocks time when it is confirmed or tentative, opaque, not declined and not
cancelled. Transparent ("show as free") and all-day events do not block: a birthday or a
holiday marker on the calendar leaves the day free. An out-of-office event with times
(a doctor's appointment, a flight marked away) blocks like any busy event, even when shown
as free. An all-day out-of-office event is a day away from work: it blocks the work
actions (WORK_ACTIONS) for the whole day and leaves rest, exercise, family and the evening
free (see docs/guides/free-windows.md, "Out of office").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from mappings.actions import ACTIONS

# Shortest window worth recommending each action for (minutes); config can change them.
DEFAULT_MIN_MINUTES: dict[str, int] = {
    "DEEP_WORK": 45,
    "ADMIN_WORK": 20,
    "LEARN": 30,
    "EXERCISE": 30,
    "MEDITATE": 10,
    "FAMILY_TIME": 30,
    "SOCIALIZE": 45,
    "ME_TIME": 20,
    "SLEEP": 180,
    "BINGE_WATCH": 30,
}
OUT_OF_OFFICE = "outOfOffice"
# What an all-day out-of-office day rules out: the person is away from work, not from life.
WORK_ACTIONS: tuple[str, ...] = ("DEEP_WORK", "ADMIN_WORK")
Interval = tuple[datetime, datetime]


def away_from_work(event: Mapping[str, Any]) -> bool:
    """An all-day out-of-office event (a day off): it blocks only the WORK_ACTIONS."""
    return (
        event.get("event_type") == OUT_OF_OFFICE
        and bool(event.get("all_day"))
        and event.get("status") != "cancelled"
        and event.get("self_response") != "declined"
    )


def blocks_time(event: Mapping[str, Any]) -> bool:
    """Whether an event (store field names) makes its time busy."""
    if event.get("status") == "cancelled" or event.get("self_response") == "declined":
        return False
    if event.get("event_type") == OUT_OF_OFFICE:
        return not event.get("all_day")  # all day: see away_from_work
    if event.get("all_day") or event.get("transparency") == "transparent":
        return False
    return event.get("status", "confirmed") in ("confirmed", "tentative")


def busy_blocks(events: Iterable[Mapping[str, Any]], *, work: bool = False) -> list[Interval]:
    """The merged, sorted busy intervals of the events that block time; with `work`, for a
    work action (also the all-day out-of-office days)."""
    spans = sorted(
        (e["start_utc"], e["end_utc"])
        for e in events
        if (blocks_time(e) or (work and away_from_work(e))) and e["end_utc"] > e["start_utc"]
    )
    merged: list[Interval] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def free_windows(lo: datetime, hi: datetime, busy: Iterable[Interval]) -> list[Interval]:
    """The gaps between busy intervals inside [lo, hi), in order."""
    out: list[Interval] = []
    cursor = lo
    for start, end in sorted(busy):
        if end <= cursor:
            continue
        if start >= hi:
            break
        if start > cursor:
            out.append((cursor, min(start, hi)))
        cursor = max(cursor, end)
        if cursor >= hi:
            break
    if cursor < hi:
        out.append((cursor, hi))
    return out


def minutes(window: Interval) -> float:
    return (window[1] - window[0]).total_seconds() / 60.0


def longest_free_minutes(free: Iterable[Interval]) -> float:
    return max((minutes(w) for w in free), default=0.0)


def fitting_actions(
    free: list[Interval], min_minutes: Mapping[str, int], work_free: list[Interval] | None = None
) -> list[str]:
    """The actions some free window is long enough for, in ACTIONS order; the work actions
    are measured against `work_free` when given (a day away from work has none)."""
    longest = longest_free_minutes(free)
    longest_work = longest if work_free is None else longest_free_minutes(work_free)
    return [
        a
        for a in ACTIONS
        if (longest_work if a in WORK_ACTIONS else longest)
        >= min_minutes.get(a, DEFAULT_MIN_MINUTES[a])
    ]


def window_for(
    action: str,
    free: Iterable[Interval],
    min_minutes: Mapping[str, int],
    max_minutes: int,
) -> Interval | None:
    """The first free window long enough for `action`, cut to at most max_minutes.

    A window is for doing one thing, not a whole free afternoon: the cut keeps the
    suggestion (and the calendar entry made from it) the size of a plan.
    """
    need = min_minutes.get(action, DEFAULT_MIN_MINUTES[action])
    for start, end in free:
        if minutes((start, end)) >= need:
            return start, min(end, start + timedelta(minutes=max(need, max_minutes)))
    return None
