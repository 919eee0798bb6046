"""The person's to-dos as Progress inputs: what got done against what was due.

Pure: the cycle hands in one frame with a row per stored change of a task (`TASK_COLUMNS`),
the task's current title, action and due instant joined on. Replaying the changes gives
each task's state at any past instant, so a slot of last week counts what was done and
open *then*, not what is true now (a task reopened today still counts as done last week).

A date-only due is stored as the end of that local day, so "due today" is a due instant
in (start of today, start of tomorrow] and "overdue" is a due instant at or before the
start of today while the task is still open.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mappings.frames import NS_PER_DAY, NS_PER_HOUR, to_ns

TASK_COLUMNS = ["task_id", "kind", "at_utc", "due_utc", "title", "action"]
TASK_INPUTS = ("tasks_today", "tasks_week", "overdue_tasks")
OPEN, DONE, GONE = 0, 1, 2
# What each stored change makes of a task; "created" and "due" leave its state alone.
_STATE_OF = {"completed": DONE, "uncompleted": OPEN, "restored": OPEN, "deleted": GONE}
_NO_DUE = np.iinfo(np.int64).max
_NEVER = np.iinfo(np.int64).min
MAX_NAMED = 5  # tasks named per input in the provenance


def empty_tasks() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object") for c in TASK_COLUMNS})


class Tasks:
    """Per task: when it first existed, its due instant, title; plus its state changes
    sorted by time (ties: the order of the frame's rows by id of the change)."""

    def __init__(self, frame: pd.DataFrame | None) -> None:
        f = frame if frame is not None else empty_tasks()
        f = f[f["at_utc"].notna()] if len(f) else f
        codes, ids = pd.factorize(f["task_id"], sort=True) if len(f) else (np.zeros(0), [])
        self.count = len(ids)
        at = to_ns(f["at_utc"]) if len(f) else np.zeros(0, dtype=np.int64)
        first = np.full(self.count, _NO_DUE, dtype=np.int64)
        np.minimum.at(first, codes.astype(np.int64), at)
        self.created = first
        per_task = f.assign(_code=codes).drop_duplicates("_code").sort_values("_code")
        due = per_task["due_utc"]
        self.due = np.full(self.count, _NO_DUE, dtype=np.int64)
        has_due = due.notna().to_numpy() if self.count else np.zeros(0, dtype=bool)
        if has_due.any():
            self.due[has_due] = to_ns(due[has_due])
        self.title = per_task["title"].fillna("").astype(str).to_numpy() if self.count else []
        kinds = f["kind"].astype(str).to_numpy() if len(f) else np.zeros(0, dtype=object)
        state = np.array([_STATE_OF.get(k, -1) for k in kinds], dtype=np.int8)
        keep = state >= 0
        order = np.argsort(at[keep], kind="stable")
        self.ev_task = codes[keep][order].astype(np.int64)
        self.ev_at = at[keep][order]
        self.ev_state = state[keep][order]


@dataclass
class TaskCounts:
    """What the tasks say at one slot's `as_of`; arrays over slots, lists of task indices."""

    has: np.ndarray
    done_today: np.ndarray
    due_today_open: np.ndarray
    done_week: np.ndarray
    missed_week: np.ndarray
    overdue: np.ndarray
    days_to_due: np.ndarray
    named: list[dict[str, list[int]]]


def count(tasks: Tasks, as_of: np.ndarray, day_lo: np.ndarray) -> TaskCounts:
    """Replay the changes up to each `as_of` (in time order) and count per slot."""
    n = len(as_of)
    out = TaskCounts(
        np.zeros(n, dtype=bool),
        np.zeros(n),
        np.zeros(n),
        np.zeros(n),
        np.zeros(n),
        np.zeros(n),
        np.full(n, np.nan),
        [{} for _ in range(n)],
    )
    if tasks.count == 0:
        return out
    state = np.zeros(tasks.count, dtype=np.int8)
    done_at = np.full(tasks.count, _NEVER, dtype=np.int64)
    applied = 0
    for i in np.argsort(as_of, kind="stable"):
        t = int(as_of[i])
        upto = int(np.searchsorted(tasks.ev_at, t, side="right"))
        if upto > applied:
            who = tasks.ev_task[applied:upto]
            what = tasks.ev_state[applied:upto]
            when = tasks.ev_at[applied:upto]
            # The last change of a task wins: keep each task's last row of this batch.
            _, last = np.unique(who[::-1], return_index=True)
            last = len(who) - 1 - last
            state[who[last]] = what[last]
            done = what[last] == DONE
            done_at[who[last][done]] = when[last][done]
            applied = upto
        exists = tasks.created <= t
        if not exists.any():
            continue
        lo, hi, week_lo = int(day_lo[i]), int(day_lo[i]) + NS_PER_DAY, t - 7 * NS_PER_DAY
        open_ = exists & (state == OPEN)
        done = exists & (state == DONE)
        due = tasks.due
        done_today = done & (done_at >= lo)
        due_today = open_ & (due > lo) & (due <= hi)
        done_week = done & (done_at >= week_lo)
        missed_week = open_ & (due > week_lo) & (due <= t)
        overdue = open_ & (due <= lo)
        # Today's due tasks are what tasks_today counts; the runway is to the next day's.
        ahead = open_ & (due > hi) & (due != _NO_DUE)
        out.has[i] = True
        out.done_today[i] = done_today.sum()
        out.due_today_open[i] = due_today.sum()
        out.done_week[i] = done_week.sum()
        out.missed_week[i] = missed_week.sum()
        out.overdue[i] = overdue.sum()
        if ahead.any():
            out.days_to_due[i] = (due[ahead].min() - t) / NS_PER_DAY
        out.named[i] = {
            "done_today": _first(done_today, done_at, reverse=True),
            "due_today": _first(due_today, due),
            "overdue": _first(overdue, due),
            "next_due": _first(ahead, due)[:1],
        }
    return out


def _first(mask: np.ndarray, key: np.ndarray, reverse: bool = False) -> list[int]:
    idx = np.flatnonzero(mask)
    order = np.argsort(-key[idx] if reverse else key[idx], kind="stable")
    return idx[order][:MAX_NAMED].tolist()


def active_fraction(as_of: np.ndarray, active_lo: np.ndarray, hours: float) -> np.ndarray:
    """How much of the active day has passed (so a morning with work still due is not
    judged like an evening); at least a quarter, so the first tasks of a day count."""
    return np.clip((as_of - active_lo) / (hours * NS_PER_HOUR), 0.25, 1.0)
