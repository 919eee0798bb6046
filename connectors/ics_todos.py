"""VTODO components of an iCalendar file or feed -> task records (RFC 5545 3.6.2).

Nextcloud Tasks, Thunderbird, Apple Reminders (CalDAV export) and Todoist's feed write
to-dos as VTODOs next to (or instead of) events. The file is the whole truth of its list:
what it no longer holds is deleted (a `TaskScope`). A recurring VTODO is one task (its
current occurrence): apps advance DUE when one is ticked off, which the history records.

  STATUS          NEEDS-ACTION / IN-PROCESS = open, COMPLETED = done, CANCELLED = cancelled;
                  a COMPLETED time or PERCENT-COMPLETE 100 without STATUS also means done
  DUE             a DATE is the end of that day in the person's zone; a floating time is
                  local; without DUE, DTSTART + DURATION is the due time
  RELATED-TO      the parent task's UID (RELTYPE PARENT, the default)

Memory: a to-do feed can hold 100,000 entries (Todoist, years of Nextcloud), and a whole
parsed calendar costs about 6 KB of objects per to-do; `connectors.ics` therefore hands
this module small calendars of a batch of to-dos at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta
from typing import Any

from connectors.base import ReadContext, Skipped, TaskRecord, TaskScope

_DONE = {
    "COMPLETED": "done",
    "CANCELLED": "cancelled",
    "NEEDS-ACTION": "open",
    "IN-PROCESS": "open",
}
MALFORMED = (KeyError, TypeError, ValueError, AttributeError, ArithmeticError)


def _instant(value: date | datetime, ctx: ReadContext) -> tuple[datetime, bool]:
    """A DATE is the end of that local day (all day); a floating time is local."""
    if not isinstance(value, datetime):
        start = datetime(value.year, value.month, value.day, tzinfo=ctx.tz)
        return (start + timedelta(days=1)).astimezone(ctx.tz), True
    if value.tzinfo is None:
        return value.replace(tzinfo=ctx.tz), False
    return value, False


def _decoded(comp: Any, name: str) -> Any:
    if name not in comp:
        return None
    value = comp.decoded(name)
    return value[0] if isinstance(value, list) and value else value


def _parent(comp: Any) -> str:
    related = comp.get("RELATED-TO")
    for item in related if isinstance(related, list) else [related] if related else []:
        reltype = str(getattr(item, "params", {}).get("RELTYPE", "PARENT")).upper()
        if reltype == "PARENT":
            return str(item)
    return ""


def todo_record(comp: Any, list_id: str, ctx: ReadContext) -> TaskRecord:
    """One VTODO as a TaskRecord (ValueError & co. for a broken one; an empty uid is
    refused by the store's plausibility check, so it is counted as skipped there)."""
    uid = str(comp.get("UID", "")).strip()
    due, all_day = None, False
    raw_due = _decoded(comp, "DUE")
    if raw_due is None and "DTSTART" in comp and "DURATION" in comp:
        start, start_all_day = _instant(_decoded(comp, "DTSTART"), ctx)
        if start_all_day:  # the end of the day was taken; a duration counts from its start
            start -= timedelta(days=1)
        due = start + _decoded(comp, "DURATION")
    elif raw_due is not None:
        due, all_day = _instant(raw_due, ctx)
    completed = _decoded(comp, "COMPLETED")
    if completed is not None:
        completed, _ = _instant(completed, ctx)
    created = _decoded(comp, "CREATED")
    if created is not None:
        created, _ = _instant(created, ctx)
    percent = _decoded(comp, "PERCENT-COMPLETE")
    percent = int(percent) if percent is not None else None
    status_text = str(comp.get("STATUS", "")).strip().upper()
    status = _DONE.get(status_text)
    if status is None:
        status = "done" if completed is not None or percent == 100 else "open"
    priority = int(_decoded(comp, "PRIORITY") or 0)
    return TaskRecord(
        list_id=list_id,
        uid=uid,
        title=str(comp.get("SUMMARY", "")).strip(),
        status=status,
        due=due,
        due_all_day=all_day,
        created=created,
        completed=completed if status == "done" else None,
        priority=priority if 0 <= priority <= 9 else 0,
        percent=percent,
        parent=_parent(comp),
    )


def records(cal: Any, list_id: str, ctx: ReadContext) -> Iterator[TaskRecord | Skipped | TaskScope]:
    """Every VTODO of a parsed calendar, then the scope saying they are the whole list."""
    unreadable: set[str] = set()
    for comp in cal.walk("VTODO"):
        try:
            yield todo_record(comp, list_id, ctx)
        except MALFORMED as err:
            uid = str(comp.get("UID", "")).strip()
            if uid:
                unreadable.add(uid)
            reason = f"malformed VTODO {uid or 'without UID'} ({type(err).__name__}: {err})"
            yield Skipped("task", reason[:300])
    yield TaskScope(list_id, frozenset(unreadable))
