"""Which meter slots a cycle must recompute: the ones whose inputs changed, plus the
current slot (and the one that was current last time, computed with partial evidence).

Changes are found by per-day fingerprints of the stored inputs (count, sum of values,
latest import or update time), kept in the `meta` table after each recompute. A changed
reading on day X can move slots from X - 1 on (baselines and weekly windows only look
back), and so can a changed event; a changed deadline-looking event moves slots up to 8
days earlier (deadline proximity looks 7 days ahead). A new weights version, time zone or
slot boundaries means a full recompute.

Prints are read for the recent days only (the export window and its baseline lookback, as
before the whole history was kept). Older days are found by the database itself: triggers
on readings and calendar_events note every written day in `meter_changes` (migration
i17_meter_changes); a cycle takes those notes, and deletes them with the meters it stored,
so a cycle over years of history reads about as much as one over the window.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import String, delete, func, select, type_coerce, update

from bridge.store import Store
from bridge.store.db import person_of
from bridge.store.models import CalendarEvent, MeterChange, Reading, Task, TaskChange
from mappings.frames import USED_METRICS
from mappings.slots import SlotKey

STATE_KEY = "meters_state"
READING_REACH_DAYS = 1  # readings and events move the slots of their own day and later
DEADLINE_REACH_DAYS = 8  # deadline proximity looks a week ahead


@dataclass
class MeterState:
    config: str = ""
    as_of: str = ""
    days: dict[str, str] = field(default_factory=dict)
    # The first day with data when the state was written: it moves only with a write
    # there, which is noted (see `first_day_moved`).
    first: str = ""

    @classmethod
    def load(cls, store: Store) -> MeterState | None:
        raw = store.get_meta(STATE_KEY)
        if not raw:
            return None
        try:
            data = json.loads(raw)
            return cls(
                str(data["config"]),
                str(data["as_of"]),
                dict(data["days"]),
                str(data.get("first", "")),
            )
        except (ValueError, KeyError, TypeError):
            return None  # unreadable: recompute everything, then write a fresh one

    def dumps(self) -> str:
        doc = {"config": self.config, "as_of": self.as_of, "days": self.days}
        if self.first:
            doc["first"] = self.first
        return json.dumps(doc, sort_keys=True)


@dataclass
class Taken:
    """The written days a cycle took from `meter_changes` (deleted when its meters are)."""

    ids: list[int]
    days: list[tuple[str, date]]  # (kind, UTC day)

    def first_changed_before(self, cut: date) -> date | None:
        """The earliest local day a written day before `cut` can reach (None: none)."""
        reach = [
            day - timedelta(days=DEADLINE_REACH_DAYS if kind == "e" else READING_REACH_DAYS)
            for kind, day in self.days
            if day < cut
        ]
        return min(reach, default=None)

    def first_day_moved(self, first: date) -> bool:
        """Whether a noted day is at or before the first day with data (UTC days are a
        local day off at most): the first day must be asked again."""
        return any(day <= first + timedelta(days=1) for _, day in self.days)


def take_changes(store: Store) -> Taken:
    """Mark the noted days as taken and return them. Taken notes stay until `forget_taken`
    runs in the transaction that stores the meters: a cycle cut short leaves them for the
    next one, and a day written meanwhile gets a fresh note."""
    c = MeterChange.__table__  # type: ignore[attr-defined]
    mine = c.c.person == store.person
    with store.session() as session:
        rows = session.execute(select(c.c.id, c.c.kind, c.c.day).where(mine)).all()
    if not rows:
        return Taken([], [])
    ids = [row[0] for row in rows]
    with store.transaction() as session:
        for at in range(0, len(ids), 500):
            session.execute(
                update(c).where(mine, c.c.id.in_(ids[at : at + 500])).values(taken=True)
            )
    days = []
    for _, kind, day in rows:
        try:
            days.append((kind, date.fromisoformat(day)))
        except ValueError:
            continue  # a row without a readable start: nothing to place
    return Taken(ids, sorted(set(days)))


def forget_taken(session: Any, taken: Taken) -> None:
    if taken.ids:
        c = MeterChange.__table__  # type: ignore[attr-defined]
        session.execute(delete(c).where(c.c.person == person_of(session), c.c.taken.is_(True)))


def _day(value: Any) -> str:
    return value.isoformat()[:10] if hasattr(value, "isoformat") else str(value)[:10]


def _join(values: Any) -> str:
    # Float sums are rounded: PostgreSQL adds in no fixed order, so the last bits of the
    # same rows' sum differ between runs and every day would look changed.
    return "|".join(f"{v:.6f}" if isinstance(v, float) else str(v) for v in values)


def fingerprints(
    store: Store,
    lo: datetime,
    hi: datetime,
    deadline_pattern: re.Pattern[str],
    tasks_from: datetime | None = None,
) -> dict[str, str]:
    """Per UTC day ("r:" readings, "e:" events, "d:" deadline events) from `lo`, and per
    task day ("t:") from `tasks_from` (default `lo`): a string that changes when the day's
    rows do."""
    r, e = Reading.__table__, CalendarEvent.__table__  # type: ignore[attr-defined]
    r_day, e_day = func.date(r.c.start_utc), func.date(e.c.start_utc)
    with store.session() as session:
        person = person_of(session)
        readings = session.execute(
            select(
                r_day,
                func.count(),
                func.sum(r.c.value),
                func.sum(r.c.utc_offset_min),
                func.max(r.c.imported_at),
            )
            .where(
                r.c.person == person,
                r.c.metric.in_(sorted(USED_METRICS)),
                r.c.start_utc >= lo,
                r.c.start_utc < hi,
            )
            .group_by(r_day)
        ).all()
        events = session.execute(
            select(
                e_day,
                func.count(),
                func.max(e.c.updated_at),
                func.sum(e.c.action_confidence),
                func.max(e.c.classified_hash),
            )
            .where(
                e.c.person == person, e.c.start_utc >= lo - timedelta(days=1), e.c.start_utc < hi
            )
            .group_by(e_day)
        ).all()
        # Deadlines reach a week back (proximity looks ahead), so they get their own key;
        # titles are matched here, with the same pattern the meters use.
        # Instants as the database returns them (text on SQLite): only compared and cut to
        # their day here, and years of events would cost a datetime each.
        titled = session.execute(
            select(
                type_coerce(e.c.start_utc, String),
                e.c.title,
                e.c.status,
                type_coerce(e.c.updated_at, String),
            ).where(
                e.c.person == person, e.c.start_utc >= lo - timedelta(days=1), e.c.start_utc < hi
            )
        ).all()
    out = {f"r:{_day(row[0])}": _join(row[1:]) for row in readings}
    out.update({f"e:{_day(row[0])}": _join(row[1:]) for row in events})
    deadlines: dict[str, list[str]] = {}
    for start, title, status, updated in titled:
        if deadline_pattern.search(title or ""):
            deadlines.setdefault(f"d:{_day(start)}", []).append(f"{start}{status}{updated}")
    out.update({key: "|".join(sorted(parts)) for key, parts in deadlines.items()})
    out.update(task_fingerprints(store, tasks_from or lo))
    return out


def task_fingerprints(store: Store, lo: datetime) -> dict[str, str]:
    """ "t:" + the day a task first existed (its earliest change; `lo` for older ones): a
    string that changes when any task of that day changes. A task moves every slot from
    its first day on (its changes are replayed, its current due date is used), so that is
    where recomputing starts. Nothing without a task source."""
    t, h = Task.__table__, TaskChange.__table__  # type: ignore[attr-defined]
    first = func.min(h.c.at_utc)
    with store.session() as session:
        rows = session.execute(
            select(first, t.c.updated_at, t.c.content_hash)
            .join(h, h.c.task_id == t.c.id)
            .where(t.c.person == person_of(session), h.c.person == person_of(session))
            .group_by(t.c.id, t.c.updated_at, t.c.content_hash)
        ).all()
    days: dict[str, list[str]] = {}
    floor = lo + timedelta(days=1)  # inside the compared range, so a change is seen
    for began, updated, digest in rows:
        began = began if began.tzinfo else began.replace(tzinfo=UTC)
        key = f"t:{_day(max(began, floor))}"
        days.setdefault(key, []).append(f"{updated}{digest}")
    return {key: "|".join(sorted(parts)) for key, parts in days.items()}


def first_changed_day(
    old: dict[str, str], new: dict[str, str], since: date, tasks_since: date | None = None
) -> date | None:
    """The earliest local day whose slots a change can reach (None: nothing changed).

    Days up to `since` (`tasks_since` for task keys) have slid out of the compared range
    and are ignored.
    """
    earliest: date | None = None
    for key in old.keys() | new.keys():
        kind, day = key.split(":", 1)
        floor = tasks_since if kind == "t" and tasks_since is not None else since
        if old.get(key) == new.get(key) or date.fromisoformat(day) <= floor:
            continue
        reach = DEADLINE_REACH_DAYS if kind == "d" else READING_REACH_DAYS
        d = date.fromisoformat(day) - timedelta(days=reach)
        earliest = d if earliest is None or d < earliest else earliest
    return earliest


def first_to_recompute(
    marks: list[SlotKey | None], changed_from: date | None, last: SlotKey
) -> SlotKey:
    """The first slot of the run to recompute: the earliest of `marks` (a missing slot, the
    one that was current last time) and the morning of the first changed day; `last` (the
    current slot) when there is none."""
    keys = [m for m in marks if m is not None]
    if changed_from is not None:
        keys.append(SlotKey(changed_from, 0))
    return min(keys, key=lambda k: (k.local_date, k.slot), default=last)
