"""Which meter slots a cycle must recompute: the ones whose inputs changed, plus the
current slot (and the one that was current last time, computed with partial evidence).

Changes are found by per-day fingerprints of the stored inputs (count, sum of values,
latest import or update time), kept in the `meta` table after each recompute. A changed
reading on day X can move slots from X - 1 on (baselines and weekly windows only look
back), and so can a changed event; a changed deadline-looking event moves slots up to 8
days earlier (deadline proximity looks 7 days ahead). A new weights version, time zone or
slot boundaries means a full recompute. Over years of history only the recent days'
prints are read each cycle; the older ones are carried over while a single print of all
the older rows (`older_print`) is unchanged.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import String, func, select, type_coerce

from bridge.store import Store
from bridge.store.models import CalendarEvent, Reading, Task, TaskChange
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
    # One print of all the rows before the recent days (see `older_print`): while it holds,
    # the per-day prints of years of history are carried over instead of recomputed.
    older: str = ""

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
                str(data.get("older", "")),
            )
        except (ValueError, KeyError, TypeError):
            return None  # unreadable: recompute everything, then write a fresh one

    def dumps(self) -> str:
        doc = {"config": self.config, "as_of": self.as_of, "days": self.days, "older": self.older}
        return json.dumps(doc, sort_keys=True)


def older_print(store: Store, lo: datetime, cut: datetime) -> str:
    """One string that changes when any input row starting in [lo, cut) does (readings) or
    in [lo - 1 day, cut - 1 day) (events, as `fingerprints` reads them)."""
    r, e = Reading.__table__, CalendarEvent.__table__  # type: ignore[attr-defined]
    with store.session() as session:
        readings = session.execute(
            select(
                func.count(),
                func.sum(r.c.value),
                func.sum(r.c.utc_offset_min),
                func.max(r.c.imported_at),
            ).where(r.c.metric.in_(sorted(USED_METRICS)), r.c.start_utc >= lo, r.c.start_utc < cut)
        ).one()
        events = session.execute(
            select(
                func.count(),
                func.max(e.c.updated_at),
                func.sum(e.c.action_confidence),
                func.max(e.c.classified_hash),
            ).where(
                e.c.start_utc >= lo - timedelta(days=1), e.c.start_utc < cut - timedelta(days=1)
            )
        ).one()
    return f"{_join(readings)}#{_join(events)}"


def carried_prints(
    state: MeterState | None, store: Store, lo: datetime, cut: datetime
) -> tuple[str, dict[str, str]]:
    """(the print of the rows before `cut`, the per-day prints of `state` still valid for
    them: readings' days before `cut`, events' days before `cut` - 1 day; none when those
    rows changed or the state has no print of them)."""
    older = older_print(store, lo, cut)
    if state is None or not state.older or state.older != older:
        return older, {}
    r_end, e_end = cut.date(), (cut - timedelta(days=1)).date()
    return (
        older,
        {
            k: v
            for k, v in state.days.items()
            if not k.startswith("t:")  # tasks are read afresh every time
            and date.fromisoformat(k[2:]) < (r_end if k.startswith("r:") else e_end)
        },
    )


def _day(value: Any) -> str:
    return value.isoformat()[:10] if hasattr(value, "isoformat") else str(value)[:10]


def _join(values: Any) -> str:
    # Float sums are rounded: PostgreSQL adds in no fixed order, so the last bits of the
    # same rows' sum differ between runs and every day would look changed.
    return "|".join(f"{v:.6f}" if isinstance(v, float) else str(v) for v in values)


def fingerprints(
    store: Store, lo: datetime, hi: datetime, deadline_pattern: re.Pattern[str]
) -> dict[str, str]:
    """Per UTC day ("r:" readings, "e:" events, "d:" deadline events): a string that changes
    when the day's rows do."""
    r, e = Reading.__table__, CalendarEvent.__table__  # type: ignore[attr-defined]
    r_day, e_day = func.date(r.c.start_utc), func.date(e.c.start_utc)
    with store.session() as session:
        readings = session.execute(
            select(
                r_day,
                func.count(),
                func.sum(r.c.value),
                func.sum(r.c.utc_offset_min),
                func.max(r.c.imported_at),
            )
            .where(r.c.metric.in_(sorted(USED_METRICS)), r.c.start_utc >= lo, r.c.start_utc < hi)
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
            .where(e.c.start_utc >= lo - timedelta(days=1), e.c.start_utc < hi)
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
            ).where(e.c.start_utc >= lo - timedelta(days=1), e.c.start_utc < hi)
        ).all()
    out = {f"r:{_day(row[0])}": _join(row[1:]) for row in readings}
    out.update({f"e:{_day(row[0])}": _join(row[1:]) for row in events})
    deadlines: dict[str, list[str]] = {}
    for start, title, status, updated in titled:
        if deadline_pattern.search(title or ""):
            deadlines.setdefault(f"d:{_day(start)}", []).append(f"{start}{status}{updated}")
    out.update({key: "|".join(sorted(parts)) for key, parts in deadlines.items()})
    out.update(task_fingerprints(store, lo))
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
            .group_by(t.c.id, t.c.updated_at, t.c.content_hash)
        ).all()
    days: dict[str, list[str]] = {}
    floor = lo + timedelta(days=1)  # inside the compared range, so a change is seen
    for began, updated, digest in rows:
        began = began if began.tzinfo else began.replace(tzinfo=UTC)
        key = f"t:{_day(max(began, floor))}"
        days.setdefault(key, []).append(f"{updated}{digest}")
    return {key: "|".join(sorted(parts)) for key, parts in days.items()}


def first_changed_day(old: dict[str, str], new: dict[str, str], since: date) -> date | None:
    """The earliest local day whose slots a change can reach (None: nothing changed).

    Days before `since` have slid out of the compared range and are ignored.
    """
    earliest: date | None = None
    for key in old.keys() | new.keys():
        kind, day = key.split(":", 1)
        if old.get(key) == new.get(key) or date.fromisoformat(day) <= since:
            continue
        reach = DEADLINE_REACH_DAYS if kind == "d" else READING_REACH_DAYS
        d = date.fromisoformat(day) - timedelta(days=reach)
        earliest = d if earliest is None or d < earliest else earliest
    return earliest


def slots_to_recompute(
    window: list[SlotKey],
    stored: set[tuple[date, int]],
    changed_from: date | None,
    last_current: SlotKey | None,
) -> list[SlotKey]:
    """Window slots that are missing, at or after a change, or at or after the last current."""
    marks = [(changed_from, 0)] if changed_from else []
    if last_current is not None:
        marks.append((last_current.local_date, last_current.slot))
    start = min(marks) if marks else (window[-1].local_date, window[-1].slot)
    return [
        k for k in window if (k.local_date, k.slot) >= start or (k.local_date, k.slot) not in stored
    ]
