"""The proxy table: every meter input as an array over slots (NaN score = no evidence).

Each input is a score in [0, 1] where higher is better for the meters it feeds, a
confidence, the raw value it came from (with its unit) and, where one applies, the
personal baseline it was compared with. Physiology only uses evidence available by the
slot's end (or now), so the morning reflects the night and later slots the day's load.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo

import numpy as np

from mappings import sleep as sleep_features
from mappings import steps as step_features
from mappings.baselines import squash
from mappings.calendar_features import CalendarFeatures, CalendarRules
from mappings.frames import NS_PER_DAY, NS_PER_HOUR, NS_PER_MIN, Events, Readings, zone_offset_ns
from mappings.intervals import Cumulative
from mappings.signals import SIGNALS, score_signal
from mappings.slots import SlotKey, day_bounds, slot_bounds
from mappings.tasks import Tasks, active_fraction, count
from mappings.vocabulary import spec

EPOCH = date(1970, 1, 1).toordinal()
PRESENCE_DAYS = 28  # a habit signal (workouts, mindfulness) counts if logged this recently
STEP_HISTORY_DAYS = 28
ACTIVE_HOURS = (7, 22)  # steps are expected over this local window


@dataclass
class InputArray:
    """One input over all slots; `name` must be declared in mappings/vocabulary.py."""

    name: str
    score: np.ndarray
    confidence: np.ndarray
    raw: np.ndarray
    # per slot: {label: baseline value}, for provenance (None: no baseline applies)
    baseline: Callable[[int], dict[str, float]] | None = None
    # per slot: {what: [task titles]}, the tasks behind the value (provenance)
    tasks: Callable[[int], dict[str, list[str]]] | None = None
    # per slot: how much of its weight the input keeps (1 = fresh; below 1 = evidence
    # carried forward past its own window, see `carry_decay`); None = 1 everywhere
    weight: np.ndarray | None = None
    # per slot: hours the evidence is past its own window (0 = fresh, NaN = no evidence)
    carried_hours: np.ndarray | None = None

    def __post_init__(self) -> None:
        spec(self.name)  # an undeclared input fails here, not later as a missing unit

    @property
    def unit(self) -> str:
        return spec(self.name).unit


@dataclass
class SlotArrays:
    keys: list[SlotKey]
    day: np.ndarray  # local date as epoch days
    day_lo: np.ndarray
    slot_lo: np.ndarray
    slot_hi: np.ndarray
    as_of: np.ndarray
    active_lo: np.ndarray
    tz_offset: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # How long past its window evidence is carried (the person's stale_after_hours).
    carry_hours: float = 48.0


_EPOCH_UTC = datetime(1970, 1, 1, tzinfo=UTC)


def _ns(dt: datetime) -> int:
    return (dt - _EPOCH_UTC) // timedelta(microseconds=1) * 1000


def slot_arrays(
    keys: list[SlotKey],
    tz: tzinfo,
    boundaries: tuple[time, ...],
    now: datetime | Mapping[SlotKey, datetime],
) -> SlotArrays:
    """Each slot's bounds and evidence cut-off: its end, or `now` when earlier (`now` per
    slot: the moment a check-in was said, so its meters use only data from before it)."""
    day_cache: dict[date, tuple[int, int]] = {}
    lo, hi, dlo, act, day = [], [], [], [], []
    for key in keys:
        if key.local_date not in day_cache:
            d0, _ = day_bounds(key.local_date, tz, boundaries)
            a0 = datetime.combine(key.local_date, time(ACTIVE_HOURS[0]), tzinfo=tz)
            day_cache[key.local_date] = (_ns(d0), _ns(a0))
        s0, s1 = slot_bounds(key, tz, boundaries)
        lo.append(_ns(s0))
        hi.append(_ns(s1))
        dlo.append(day_cache[key.local_date][0])
        act.append(day_cache[key.local_date][1])
        day.append(key.local_date.toordinal() - EPOCH)
    slot_hi = np.array(hi, dtype=np.int64)
    if isinstance(now, datetime):
        as_of = np.minimum(slot_hi, _ns(now))
    else:
        as_of = np.minimum(slot_hi, np.array([_ns(now[k]) for k in keys], dtype=np.int64))
    return SlotArrays(
        keys,
        np.array(day, dtype=np.int64),
        np.array(dlo, dtype=np.int64),
        np.array(lo, dtype=np.int64),
        slot_hi,
        as_of,
        np.array(act, dtype=np.int64),
        zone_offset_ns(as_of, tz),
    )


# Evidence carried past its own window (last night's sleep when tonight's has not come
# in, the last HRV of a watch left on the charger) keeps a share of its weight and
# confidence that halves every `stale_after_hours / 2` hours past the window, and is
# dropped once it is `stale_after_hours` past it; a meter whose freshest input is older
# than `stale_after_hours` is marked stale (mappings/freshness.py). So a meter is a
# number with a lower confidence the morning the night has not synced yet, not null.
SLEEP_WINDOW_HOURS = 24.0  # a night speaks for the day it ends


def carry_decay(overdue_hours: np.ndarray, carry_hours: float) -> np.ndarray:
    """Share of weight and confidence kept by evidence `overdue_hours` past its window
    (1 within it, halving every carry_hours / 2, 0 = dropped beyond carry_hours)."""
    over = np.maximum(np.nan_to_num(overdue_hours, nan=np.inf), 0.0)
    if carry_hours <= 0:
        return np.where(over > 0, 0.0, 1.0)
    return np.where(over <= carry_hours, 0.5 ** (over / (carry_hours / 2)), 0.0)


def sleep_inputs(
    readings: Readings,
    sl: SlotArrays,
    targets: dict[str, float],
    carry_hours: float = 48.0,
) -> list[InputArray]:
    night = sleep_features.nightly(readings)
    if night.empty:
        return []
    # Per slot: this day's night if it has ended by the slot's cut-off, else the newest
    # earlier one (never a night that counts for a later day).
    ends = night["end"].to_numpy(dtype=float)
    days = night.index.to_numpy()
    own = np.searchsorted(days, sl.day, side="right") - 1

    def ended(j: np.ndarray) -> np.ndarray:
        return (j >= 0) & (ends[np.clip(j, 0, None)] <= sl.as_of)

    pick = np.where(ended(own), own, np.where(ended(own - 1), own - 1, -1))
    at = np.clip(pick, 0, None)
    row = night.iloc[at].reset_index(drop=True)
    found = pick >= 0
    wake_day = np.where(found, days[at], -1)
    age_h = (sl.as_of - np.where(found, ends[at], 0)) / NS_PER_HOUR
    # This day's own night is fresh whenever it arrived; an older one is carried.
    overdue = np.where(wake_day == sl.day, 0.0, np.maximum(age_h - SLEEP_WINDOW_HOURS, 0.0))
    decay = np.where(found, carry_decay(overdue, carry_hours), 0.0)
    known = found & (decay > 0)

    def col(name: str) -> np.ndarray:
        return np.where(known, row[name].to_numpy(dtype=float), np.nan)

    conf = col("confidence") * decay
    asleep = col("asleep_min")
    staged = known & row["staged"].fillna(False).to_numpy(dtype=bool)
    deep, rem = (
        np.where(staged, col("deep_share"), np.nan),
        np.where(staged, col("rem_share"), np.nan),
    )
    eff, reg = col("efficiency"), col("regularity_min")
    need = targets["sleep_minutes"]
    out = [
        InputArray("sleep_duration", squash((asleep - (need - 60)) / 45), conf, asleep),
        InputArray("sleep_efficiency", squash((eff - 0.85) / 0.04), conf, eff),
        InputArray(
            "deep_sleep_share",
            squash((deep - targets["deep_share"] * 0.75) / 0.04),
            conf,
            deep,
        ),
        InputArray(
            "rem_sleep_share",
            squash((rem - targets["rem_share"] * 0.75) / 0.04),
            conf,
            rem,
        ),
        InputArray("sleep_regularity", squash((60 - reg) / 30), conf, reg),
    ]
    for inp in out:
        inp.score = np.where(np.isnan(inp.raw), np.nan, inp.score)
        inp.confidence = np.where(np.isnan(inp.raw), np.nan, inp.confidence)
        inp.weight = decay
        inp.carried_hours = np.where(known, overdue, np.nan)
    return out


def signal_inputs(
    readings: Readings, sl: SlotArrays, carry_hours: float = 48.0
) -> list[InputArray]:
    out = []
    for signal in SIGNALS:
        res = score_signal(readings, signal, sl.as_of, sl.tz_offset, carry_hours)
        if not res.sources:
            continue
        spoke = [
            (label, mean.tolist(), np.round(center, 3).tolist())
            for label, (mean, center) in res.sources.items()
        ]

        def baseline(i: int, spoke: list = spoke) -> dict[str, float]:
            here = [(label, m[i], c[i]) for label, m, c in spoke if m[i] == m[i]]
            out = {f"{label}_median": center for label, _, center in here}
            if len(here) > 1:  # the value is per source then
                out.update({f"{label}_latest": round(mean, 3) for label, mean, _ in here})
            return out

        decay = carry_decay(res.overdue_hours, carry_hours)
        out.append(
            InputArray(
                signal.name,
                res.score,
                res.confidence * decay,
                res.raw,
                baseline=baseline,
                weight=decay,
                carried_hours=res.overdue_hours,
            )
        )
    return out


@dataclass(frozen=True)
class Habit:
    """Minutes of something a person logs (workouts, mindfulness) over a trailing window;
    its metric and unit are its input's, declared in mappings/vocabulary.py."""

    name: str
    window_days: int
    target: str  # key in [targets]
    saturating: bool  # 1 - exp(-m / target) instead of min(1, m / target)

    @property
    def metric(self) -> str:
        (metric,) = spec(self.name).metrics
        return metric


# Habits count only for people who log them: no workout in 28 days means no evidence,
# not a zero (someone without a watch app is not penalised).
HABITS = (
    Habit("workouts", 7, "workout_minutes_week", False),
    Habit("mindful", 1, "mindful_minutes_day", True),
)


def steps_input(
    readings: Readings,
    sl: SlotArrays,
    targets: dict[str, float],
    priority: tuple[str, ...],
    day_start: time,
) -> list[InputArray]:
    """Steps so far today vs the person's usual day, scaled to the time of day."""
    resolved = step_features.resolve(readings, priority)
    if resolved.empty:
        return []
    done, records = step_features.StepCounter(resolved).between(sl.day_lo, sl.as_of)
    active = (ACTIVE_HOURS[1] - ACTIVE_HOURS[0]) * NS_PER_HOUR
    fraction = np.clip((sl.as_of - sl.active_lo) / active, 0, 1)
    start_ns = (day_start.hour * 60 + day_start.minute) * NS_PER_MIN
    daily = step_features.daily_totals(resolved, start_ns)
    first = int(min(daily.index.min(), sl.day.min()))
    full = daily.reindex(range(first, int(max(daily.index.max(), sl.day.max())) + 1))
    past = full.shift(1).rolling(STEP_HISTORY_DAYS, min_periods=1)
    median = past.median().reindex(sl.day).to_numpy()
    days = past.count().reindex(sl.day).fillna(0).to_numpy()
    personal = days >= 7
    usual = np.where(personal, median, targets["steps_per_day"])
    conf = np.where(personal, np.minimum(1.0, days / 14), 0.4) * fraction
    ratio = done / np.maximum(usual * fraction, 1.0)
    has = (records > 0) & (fraction >= 0.05)
    usual_list = np.round(usual, 3).tolist()
    return [
        InputArray(
            "steps",
            np.where(has, squash(2.0 * (ratio - 1.0)), np.nan),
            np.where(has, conf, np.nan),
            np.where(has, done, np.nan),
            lambda i: {"usual_per_day": usual_list[i]},
        )
    ]


def habit_inputs(readings: Readings, sl: SlotArrays, targets: dict[str, float]) -> list[InputArray]:
    out = []
    for habit in HABITS:
        frame = readings.metric(habit.metric)
        if frame.empty:
            continue
        end = frame["end"].to_numpy()
        minutes = frame["value"].to_numpy(dtype=float)
        span = (end - frame["start"].to_numpy()) / NS_PER_MIN
        # No value: the record's length; a negative value is a broken record.
        minutes = np.clip(np.where(np.isnan(minutes), span, minutes), 0.0, None)
        cum = Cumulative(end, minutes)
        total, _ = cum.window(sl.as_of - habit.window_days * NS_PER_DAY, sl.as_of)
        _, recent = cum.window(sl.as_of - PRESENCE_DAYS * NS_PER_DAY, sl.as_of)
        target = targets[habit.target]
        score = (
            1.0 - np.exp(-total / target) if habit.saturating else np.minimum(1.0, total / target)
        )
        has = recent > 0
        out.append(
            InputArray(
                habit.name,
                np.where(has, score, np.nan),
                np.where(has, 0.9, np.nan),
                np.where(has, total, np.nan),
            )
        )
    return out


def calendar_inputs(
    events: Events, sl: SlotArrays, targets: dict[str, float], rules: CalendarRules
) -> list[InputArray]:
    cal = CalendarFeatures(events, rules)
    has = cal.has_calendar(sl.day_lo - 7 * NS_PER_DAY, sl.slot_hi)
    if not has.any():
        return []
    n = len(sl.keys)
    one = np.ones(n)

    def gate(values: np.ndarray, extra: np.ndarray | None = None) -> np.ndarray:
        ok = has if extra is None else has & extra
        return np.where(ok, values, np.nan)

    slot_busy = np.nan_to_num(cal.busy_share(sl.slot_lo, sl.slot_hi))
    later = sl.slot_lo > sl.day_lo
    load = np.nan_to_num(cal.busy_share(sl.day_lo, sl.slot_lo))
    meetings = cal.meetings(sl.day_lo, sl.slot_hi)
    stretch = cal.longest_stretch_min(sl.day_lo, sl.slot_hi)
    focus_today = cal.focus_min(sl.day_lo, sl.as_of)
    focus_week = cal.focus_min(sl.day_lo - 7 * NS_PER_DAY, sl.day_lo) / 7
    social = cal.social_events(sl.as_of - 7 * NS_PER_DAY, sl.as_of)
    deadline = cal.days_to_deadline(sl.as_of)
    work = targets["work_minutes"]
    return [
        InputArray(
            "slot_density",
            gate(1.0 - slot_busy),
            gate(one),
            gate(slot_busy),
        ),
        InputArray(
            "day_load",
            gate(1.0 - np.minimum(1.0, load * 2), later),
            gate(one, later),
            gate(load, later),
        ),
        InputArray(
            "meeting_density",
            gate(1.0 - np.minimum(1.0, meetings / (2 * targets["meetings_per_day"]))),
            gate(one),
            gate(meetings),
        ),
        InputArray(
            "longest_stretch",
            gate(squash((targets["stretch_minutes"] - stretch) / 30)),
            gate(one),
            gate(stretch),
        ),
        InputArray(
            "focus_today",
            gate(np.minimum(1.0, focus_today / work)),
            gate(one),
            gate(focus_today),
        ),
        InputArray(
            "focus_week",
            gate(np.minimum(1.0, focus_week / work)),
            gate(one * 0.8),
            gate(focus_week),
        ),
        InputArray(
            "deadline_runway",
            gate(np.where(np.isnan(deadline), 1.0, np.clip(deadline / 7, 0.0, 1.0))),
            gate(one * 0.7),
            gate(deadline),
        ),
        InputArray(
            "social_week",
            gate(1.0 - np.exp(-social / targets["social_events_week"])),
            gate(one),
            gate(social),
        ),
    ]


def task_inputs(tasks: Tasks, sl: SlotArrays, targets: dict[str, float]) -> list[InputArray]:
    """Tasks done against tasks due (today, past 7 days), overdue load, next real due date.

    Only for people with a task source: without a stored task there is no evidence (not a
    zero), so Progress stays what the calendar alone makes it.
    """
    c = count(tasks, sl.as_of, sl.day_lo)
    if not c.has.any():
        return []
    has = c.has
    fraction = active_fraction(sl.as_of, sl.active_lo, ACTIVE_HOURS[1] - ACTIVE_HOURS[0])
    planned_today = c.done_today + c.due_today_open
    today = has & (planned_today > 0)
    week = has & (c.done_week + c.missed_week > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        # Open tasks due later today are not missed yet: early in the day the score leans
        # to neutral and reaches done / (done + open) by the end of the active day.
        rate = c.done_today / planned_today
        rate_today = np.maximum(rate, 0.5 * (1.0 - fraction) + rate * fraction)
        rate_week = c.done_week / (c.done_week + c.missed_week)
    named = c.named
    titles = tasks.title

    def names(*which: str) -> Callable[[int], dict[str, list[str]]]:
        def pick(i: int) -> dict[str, list[str]]:
            found = {w: [str(titles[k]) for k in named[i].get(w, [])] for w in which}
            return {w: t for w, t in found.items() if t}

        return pick

    def gate(ok: np.ndarray, values: np.ndarray) -> np.ndarray:
        return np.where(ok, values, np.nan)

    days = c.days_to_due
    return [
        InputArray(
            "tasks_today",
            gate(today, np.clip(rate_today, 0.0, 1.0)),
            gate(today, np.minimum(1.0, 0.5 + planned_today / 6)),
            gate(today, c.done_today),
            tasks=names("done_today", "due_today"),
        ),
        InputArray(
            "tasks_week",
            gate(week, rate_week),
            gate(week, np.full(len(has), 0.9)),
            gate(week, c.done_week),
        ),
        InputArray(
            "overdue_tasks",
            gate(has, np.exp(-c.overdue / targets["overdue_tasks"])),
            gate(has, np.full(len(has), 0.9)),
            gate(has, c.overdue),
            tasks=names("overdue"),
        ),
        InputArray(
            "deadline_runway",
            gate(has, np.where(np.isnan(days), 1.0, np.clip(days / 7, 0.0, 1.0))),
            gate(has, np.full(len(has), 0.8)),
            gate(has, days),
            # One unit with the calendar's (declared once): a slot's value must not depend
            # on which other slots were computed with it; the provenance names the task.
            tasks=names("next_due"),
        ),
    ]


def _merge(calendar: InputArray | None, task: InputArray) -> InputArray:
    """A real due date replaces a deadline guessed from event titles, slot by slot."""
    if calendar is None:
        return task
    use = ~np.isnan(task.score)

    def pick(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(use, a, b)

    from_tasks = use.tolist()
    return InputArray(
        task.name,
        pick(task.score, calendar.score),
        pick(task.confidence, calendar.confidence),
        pick(task.raw, calendar.raw),
        tasks=lambda i: task.tasks(i) if from_tasks[i] and task.tasks else {},
    )


def all_inputs(
    readings: Readings,
    events: Events,
    sl: SlotArrays,
    *,
    targets: dict[str, float],
    priority: tuple[str, ...],
    rules: CalendarRules,
    day_start: time,
    tasks: Tasks | None = None,
) -> dict[str, InputArray]:
    found = [
        *sleep_inputs(readings, sl, targets, sl.carry_hours),
        *signal_inputs(readings, sl, sl.carry_hours),
        *steps_input(readings, sl, targets, priority, day_start),
        *habit_inputs(readings, sl, targets),
        *calendar_inputs(events, sl, targets, rules),
    ]
    out = {inp.name: inp for inp in found}
    for inp in task_inputs(tasks, sl, targets) if tasks is not None else []:
        out[inp.name] = _merge(out.get(inp.name), inp) if inp.name == "deadline_runway" else inp
    return out
