"""Local days and slots: where an instant falls in the person's week.

A local day runs from the first slot boundary (default 05:00) to the same time next day,
so the small hours belong to the previous day's `night` slot, as a person would say it.
`day` 0 is Monday and `timestep = day * 4 + slot` within the ISO week (0..27), as in
RhythmEnv.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

SLOT_NAMES: tuple[str, ...] = ("morning", "afternoon", "evening", "night")
DEFAULT_BOUNDARIES: tuple[time, ...] = (time(5), time(12), time(17), time(22))


@dataclass(frozen=True, slots=True)
class SlotKey:
    """One slot of one local day."""

    local_date: date
    slot: int

    @property
    def day(self) -> int:
        return self.local_date.weekday()

    @property
    def timestep(self) -> int:
        return self.day * 4 + self.slot

    @property
    def name(self) -> str:
        return SLOT_NAMES[self.slot]

    def next(self) -> SlotKey:
        if self.slot < 3:
            return SlotKey(self.local_date, self.slot + 1)
        return SlotKey(self.local_date + timedelta(days=1), 0)

    def prev(self) -> SlotKey:
        if self.slot > 0:
            return SlotKey(self.local_date, self.slot - 1)
        return SlotKey(self.local_date - timedelta(days=1), 3)


def slot_of(local: datetime, boundaries: tuple[time, ...] = DEFAULT_BOUNDARIES) -> SlotKey:
    """The slot a local wall-clock datetime falls in."""
    t = local.time()
    if t < boundaries[0]:
        return SlotKey(local.date() - timedelta(days=1), 3)
    slot = 0
    for i, b in enumerate(boundaries):
        if t >= b:
            slot = i
    return SlotKey(local.date(), slot)


def slot_of_instant(
    instant: datetime, tz: tzinfo, boundaries: tuple[time, ...] = DEFAULT_BOUNDARIES
) -> SlotKey:
    """The slot an aware instant falls in, in the person's time zone."""
    return slot_of(instant.astimezone(tz), boundaries)


def slot_bounds(
    key: SlotKey, tz: tzinfo, boundaries: tuple[time, ...] = DEFAULT_BOUNDARIES
) -> tuple[datetime, datetime]:
    """UTC start and end of a slot.

    Each end is built in local wall time, then converted, so a slot that spans a DST change
    has its true length (Python subtracts same-zone aware datetimes naively).
    """
    start_day = key.local_date
    start = datetime.combine(start_day, boundaries[key.slot], tzinfo=tz)
    if key.slot < 3:
        end = datetime.combine(start_day, boundaries[key.slot + 1], tzinfo=tz)
    else:
        end = datetime.combine(start_day + timedelta(days=1), boundaries[0], tzinfo=tz)
    return start.astimezone(UTC), end.astimezone(UTC)


def day_bounds(
    local_date: date, tz: tzinfo, boundaries: tuple[time, ...] = DEFAULT_BOUNDARIES
) -> tuple[datetime, datetime]:
    """UTC start and end of a local day (first boundary to first boundary)."""
    start = datetime.combine(local_date, boundaries[0], tzinfo=tz)
    end = datetime.combine(local_date + timedelta(days=1), boundaries[0], tzinfo=tz)
    return start.astimezone(UTC), end.astimezone(UTC)


def slots_between(first: SlotKey, last: SlotKey) -> list[SlotKey]:
    """All slots from first to last inclusive, in order."""
    out = []
    key = first
    while (key.local_date, key.slot) <= (last.local_date, last.slot):
        out.append(key)
        key = key.next()
    return out


def parse_slot(text: str | int) -> int:
    """A slot given as its name (`morning`) or number (`0`); ValueError names the choices."""
    value = str(text).strip().lower()
    if value in SLOT_NAMES:
        return SLOT_NAMES.index(value)
    if value in ("0", "1", "2", "3"):
        return int(value)
    choices = ", ".join(f"{name} ({i})" for i, name in enumerate(SLOT_NAMES))
    raise ValueError(f"{text!r} is not a slot; use one of {choices}")
