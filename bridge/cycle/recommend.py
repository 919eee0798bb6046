"""The cycle's recommendation step: the runner's view of the coming slot, and its answer."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlmodel import col

from bridge.clock import target_slot
from bridge.config import Settings
from bridge.cycle.tasks import task_observation
from bridge.errors import BridgeError, ConfigError
from bridge.learning.history import interaction_history
from bridge.runner.base import STATED
from bridge.store import Store, upsert
from bridge.store.db import dumps, utcnow
from bridge.store.models import CalendarEvent, MeterSnapshot, Recommendation
from mappings.actions import ACTIONS, METERS
from mappings.free_windows import (
    DEFAULT_MIN_MINUTES,
    WORK_ACTIONS,
    Interval,
    away_from_work,
    blocks_time,
    busy_blocks,
    fitting_actions,
    free_windows,
    longest_free_minutes,
    window_for,
)
from mappings.slots import SlotKey, slot_bounds

log = logging.getLogger("rhythm_bridge.cycle")


EVENT_FIELDS = (
    "start_utc",
    "end_utc",
    "status",
    "transparency",
    "all_day",
    "event_type",
    "self_response",
)
START_STEP = 5  # a window that starts "now" starts at the next whole 5 minutes


def min_minutes(settings: Settings) -> dict[str, int]:
    """Each action's shortest window: the defaults with the config laid over them."""
    extra = settings.windows.min_minutes
    unknown = sorted(set(extra) - set(ACTIONS))
    if unknown:
        raise ConfigError(
            f"config key 'windows.min_minutes': unknown action {unknown[0]!r}; "
            f"use one of {', '.join(ACTIONS)}"
        )
    if any(not 0 < int(v) <= 24 * 60 for v in extra.values()):
        raise ConfigError("config key 'windows.min_minutes': minutes must be 1..1440")
    return {**DEFAULT_MIN_MINUTES, **{k: int(v) for k, v in extra.items()}}


@dataclass(frozen=True)
class Busy:
    """The stored calendar's busy time: for every action, and for the work actions (which
    an all-day out-of-office day also rules out); with the blocking events' titles, so a
    reason can say what fills a slot."""

    every: list[Interval]
    work: list[Interval]
    titled: list[tuple[datetime, datetime, str, bool]]  # (start, end, title, work only)

    def of(self, action: str | None) -> list[Interval]:
        return self.work if action in WORK_ACTIONS else self.every

    def titles(self, lo: datetime, hi: datetime, *, work: bool, most: int = 3) -> list[str]:
        """The distinct titles of the events that block time in [lo, hi) (for a work action,
        also the days away from work), first ones first."""
        seen: list[str] = []
        for start, end, title, work_only in self.titled:
            if work_only and not work:
                continue
            if start < hi and end > lo and title and title not in seen:
                seen.append(title)
        return seen[:most]


def busy_between(store: Store, lo: datetime, hi: datetime) -> Busy:
    """The busy time of the stored events overlapping [lo, hi)."""
    cols = [getattr(CalendarEvent, f) for f in EVENT_FIELDS]
    with store.session() as session:
        rows = session.execute(
            select(*cols, col(CalendarEvent.title)).where(
                col(CalendarEvent.start_utc) < hi,
                col(CalendarEvent.end_utc) > lo,
                col(CalendarEvent.status) != "cancelled",
            )
        ).all()
    events = [dict(zip(EVENT_FIELDS, row[:-1], strict=True)) for row in rows]
    titled = sorted(
        (e["start_utc"], e["end_utc"], row[-1], not blocks_time(e))
        for e, row in zip(events, rows, strict=True)
        if blocks_time(e) or away_from_work(e)
    )
    return Busy(busy_blocks(events), busy_blocks(events, work=True), titled)


def _round_up(t: datetime) -> datetime:
    t = t.astimezone(UTC)
    extra = timedelta(minutes=t.minute % START_STEP, seconds=t.second, microseconds=t.microsecond)
    return t if not extra else t - extra + timedelta(minutes=START_STEP)


def slot_free(
    settings: Settings, key: SlotKey, busy: list[Interval], not_before: datetime
) -> list[Interval]:
    """The free windows of a slot that are still ahead of `not_before`."""
    lo, hi = slot_bounds(key, settings.tz, settings.boundaries)
    lo = max(lo, _round_up(not_before))
    return free_windows(lo, hi, busy) if lo < hi else []


@dataclass(frozen=True)
class Plan:
    """Where the recommendation goes: its slot, that slot's free windows, and why there."""

    key: SlotKey
    free: list[Interval]
    available: list[str]
    reason: str | None  # set when the plan is not the coming slot, or has no window
    work_free: list[Interval] | None = None  # for the work actions, when that differs

    def free_for(self, action: str) -> list[Interval]:
        if action in WORK_ACTIONS and self.work_free is not None:
            return self.work_free
        return self.free


def _slots_text(keys: list[SlotKey]) -> str:
    """'the afternoon and evening of 2026-11-27 and the morning of 2026-11-28'."""
    by_day: dict[Any, list[str]] = {}
    for k in keys:
        by_day.setdefault(k.local_date, []).append(k.name)
    parts = []
    for day, names in by_day.items():
        named = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        parts.append(f"the {named} of {day.isoformat()}")
    return " and ".join(parts)


def moved_reason(
    settings: Settings,
    skipped: list[SlotKey],
    chosen: SlotKey,
    need: tuple[str | None, int],
    busy: Busy,
) -> str:
    """Why the recommendation is not for the coming slot: every slot passed over, named, with
    what fills them; and, when it lands on a night from a day slot, that nothing fit sooner."""
    lo, _ = slot_bounds(skipped[0], settings.tz, settings.boundaries)
    _, hi = slot_bounds(skipped[-1], settings.tz, settings.boundaries)
    action, shortest = need
    titles = busy.titles(lo, hi, work=action in WORK_ACTIONS)
    what = f" (busy: {'; '.join(titles)})" if titles else ""
    made = f"made for the {chosen.name} of {chosen.local_date.isoformat()}"
    if chosen.slot == 3 and skipped[0].slot != 3:
        made += ", the first slot with room: nothing else fits sooner"
    return f"no free {shortest} min in {_slots_text(skipped)}{what}; {made}"


def plan_slot(
    store: Store, settings: Settings, key: SlotKey, now: datetime, *, action: str | None = None
) -> Plan:
    """The coming slot if some action (or `action`) fits in it, else the next slot that has room.

    With no room in the whole look-ahead, the coming slot with no window and the reason.
    """
    need = min_minutes(settings)
    ahead = [key]
    for _ in range(settings.windows.look_ahead_slots - 1):
        ahead.append(ahead[-1].next())
    lo, _ = slot_bounds(key, settings.tz, settings.boundaries)
    _, hi = slot_bounds(ahead[-1], settings.tz, settings.boundaries)
    busy = busy_between(store, min(lo, now), hi)
    shortest = need[action] if action else min(need.values())
    skipped: list[SlotKey] = []
    for k in ahead:
        free = slot_free(settings, k, busy.every, now)
        work_free = slot_free(settings, k, busy.work, now)
        fits = fitting_actions(free, need, work_free)
        if action is not None:
            fits = [a for a in fits if a == action]
        if fits:
            reason = (
                moved_reason(settings, skipped, k, (action, shortest), busy) if skipped else None
            )
            return Plan(k, free, fits, reason, work_free)
        skipped.append(k)
    hours = settings.windows.look_ahead_slots * 6
    what = f"{action} ({shortest} min)" if action else f"{shortest} min"
    return Plan(
        key,
        [],
        [],
        f"the calendar has no free window for {what} in the next "
        f"{settings.windows.look_ahead_slots} slots (about {hours} h)",
    )


def observation_for(
    store: Store, settings: Settings, key: SlotKey, now: datetime, plan: Plan | None = None
) -> dict[str, Any]:
    """The runner's view of a slot: the latest meters at or before it, the action already
    scheduled in what is left of it, and (with a plan) its longest free window and the
    actions that fit."""
    with store.session() as session:
        snap = session.execute(
            select(MeterSnapshot)
            .where(
                (col(MeterSnapshot.local_date) < key.local_date)
                | ((MeterSnapshot.local_date == key.local_date) & (MeterSnapshot.slot <= key.slot))
            )
            .order_by(col(MeterSnapshot.local_date).desc(), col(MeterSnapshot.slot).desc())
            .limit(1)
        ).scalar_one_or_none()
        lo, hi = slot_bounds(key, settings.tz, settings.boundaries)
        # An event already over is not "scheduled": a morning run at 07:00 must not make
        # EXERCISE look planned for a window at 08:40.
        event = session.execute(
            select(col(CalendarEvent.action))
            .where(
                col(CalendarEvent.start_utc) < hi,
                col(CalendarEvent.end_utc) > max(lo, now),
                col(CalendarEvent.status) != "cancelled",
                col(CalendarEvent.all_day).is_(False),
                col(CalendarEvent.action).in_(ACTIONS),
            )
            .order_by(col(CalendarEvent.start_utc))
            .limit(1)
        ).scalar_one_or_none()
    obs: dict[str, Any] = {
        "timestep": key.timestep,
        "day": key.day,
        "slot": key.slot,
        "remaining_steps": 27 - key.timestep,
        "active_event": event,
    }
    for m in METERS:
        obs[m] = getattr(snap, m) if snap else None
    obs.update(task_observation(store, lo, hi))  # only for people with a task source
    if plan is not None and plan.available:
        obs["free_minutes"] = round(longest_free_minutes(plan.free))
        obs["available_actions"] = list(plan.available)
    return obs


def configured_runner(settings: Settings, name: str | None = None) -> Any:
    """The runner the config names, built with its options; a bad option is a config error."""
    from bridge.runner import load_runner

    name = name or settings.runner.name
    options = dict(settings.runner.options) if name == settings.runner.name else {}
    adapter = settings.person_path / "adapter.json"
    if name == "bundled" and "adapter" not in options and adapter.exists():
        try:  # written by the weekly refit (bridge.learning.adapter)
            return load_runner(name, **options, adapter=str(adapter))
        except BridgeError as err:  # a broken adapter must not stop recommendations
            log.warning("ignoring the adapter: %s", err)
    try:
        return load_runner(name, **options)
    except (ValueError, TypeError) as err:
        raise BridgeError(f"config key 'runner': {err}") from None


NEXT_FREE_DAYS = 7  # how far past a fully booked look-ahead the next free window is sought


@dataclass(frozen=True)
class NoWindow:
    """No recommendation: no slot of the look-ahead has a window long enough for any action.

    Nothing is stored that could be answered; the state is kept in the meta table (see
    bridge.out.snapshot.NO_WINDOW_META) for the snapshot, the page, the API and MQTT.
    """

    key: SlotKey
    reason: str
    look_ahead_until: datetime
    next_window: Interval | None

    id = None
    action = None


def next_free_window(
    store: Store, settings: Settings, after: SlotKey, now: datetime, need: int
) -> Interval | None:
    """The first window of at least `need` minutes in the NEXT_FREE_DAYS after slot `after`."""
    keys = [after.next()]
    while len(keys) < NEXT_FREE_DAYS * 4:
        keys.append(keys[-1].next())
    lo, _ = slot_bounds(keys[0], settings.tz, settings.boundaries)
    _, hi = slot_bounds(keys[-1], settings.tz, settings.boundaries)
    busy = busy_between(store, lo, hi)
    for k in keys:
        for start, end in slot_free(settings, k, busy.every, now):
            if end - start >= timedelta(minutes=need):
                return start, end
    return None


def _no_window(store: Store, settings: Settings, key: SlotKey, plan: Plan, now: datetime):
    """Keep the no-window state (what the outputs show) and return it."""
    from bridge.out.snapshot import save_no_window

    last = key
    for _ in range(settings.windows.look_ahead_slots - 1):
        last = last.next()
    _, until = slot_bounds(last, settings.tz, settings.boundaries)
    need = min(min_minutes(settings).values())
    gap = NoWindow(
        key=key,
        reason=plan.reason or "no free window",
        look_ahead_until=until,
        next_window=next_free_window(store, settings, last, now, need),
    )
    save_no_window(store, gap.key, gap.reason, gap.look_ahead_until, gap.next_window)
    return gap


def recommend(
    store: Store, settings: Settings, now: datetime, *, runner_name: str | None = None
) -> Recommendation | NoWindow:
    """The recommendation for the coming slot; made once per slot and then kept.

    It is for a free window of the calendar: when the coming slot has none long enough for
    any action, it is made for the next slot that has one (and says so). When no slot of
    the look-ahead has one, nothing is recommended: the NoWindow says why, and when the
    next free window is (if the calendar shows one within NEXT_FREE_DAYS).
    """
    from bridge.out.snapshot import clear_no_window

    key = target_slot(settings, now)
    existing = _existing(store, key)
    if existing is not None:
        clear_no_window(store)
        return existing
    plan = plan_slot(store, settings, key, now)
    if not plan.available:
        return _no_window(store, settings, key, plan, now)
    clear_no_window(store)
    if plan.key != key:
        existing = _existing(store, plan.key)
        if existing is not None:
            return existing
    key = plan.key
    obs = observation_for(store, settings, key, now, plan)
    runner = configured_runner(settings, runner_name)
    history = interaction_history(store, key, after=getattr(runner, "history_since", None))
    rec = runner.recommend(obs, history)
    fallback_reason = rec.fallback_reason
    if rec.action not in plan.available:
        # A runner that ignores the calendar must not put an action where it cannot happen.
        from bridge.runner.heuristic import HeuristicRunner

        wrong = rec.action
        rec = HeuristicRunner().recommend(obs, history)
        fallback_reason = f"{runner_name or settings.runner.name} chose {wrong}, no window for it"
    window = window_for(
        rec.action, plan.free_for(rec.action), min_minutes(settings), settings.windows.max_minutes
    )
    row = {
        "local_date": key.local_date,
        "slot": key.slot,
        "timestep": key.timestep,
        "action": rec.action,
        "belief": json.dumps(rec.belief),
        "belief_sd": json.dumps(rec.extra["belief_sd"]) if rec.extra.get("belief_sd") else None,
        "model_accept": rec.extra.get(STATED),
        "rationale": rec.rationale,
        "runner": rec.runner,
        "runner_version": rec.runner_version,
        "observation": dumps(obs),
        "fallback_reason": fallback_reason,
        "window_start": window[0] if window else None,
        "window_end": window[1] if window else None,
        "window_reason": plan.reason,
        "created_at": utcnow(),
    }
    return _store_recommendation(store, row)


def _store_recommendation(store: Store, row: dict[str, Any]) -> Recommendation:
    """Store one slot's recommendation (the first one made for the slot stays) and return it."""
    with store.transaction() as session:
        upsert(session, Recommendation, [row], keys=("local_date", "slot"))
        return session.execute(
            select(Recommendation).where(
                Recommendation.local_date == row["local_date"],
                Recommendation.slot == row["slot"],
            )
        ).scalar_one()


def _existing(store: Store, key: SlotKey) -> Recommendation | None:
    with store.session() as session:
        return session.execute(
            select(Recommendation).where(
                col(Recommendation.local_date) == key.local_date,
                col(Recommendation.slot) == key.slot,
            )
        ).scalar_one_or_none()


RESCHEDULE_DAYS = 2  # "today or tomorrow"


def reschedule(
    store: Store, settings: Settings, rec_id: int, now: datetime
) -> Recommendation | None:
    """The next free window for the same action, as a new recommendation; None if none.

    Looked for in the slots after the rescheduled one, through the end of tomorrow, that
    have no recommendation yet. Made once: asking again returns the same proposal.
    """
    with store.session() as session:
        rec = session.get(Recommendation, rec_id)
        if rec is None:
            return None
        done = session.execute(
            select(Recommendation).where(col(Recommendation.rescheduled_from) == rec_id)
        ).scalar_one_or_none()
        if done is not None:
            return done
        taken = {
            (r.local_date, r.slot)
            for r in session.execute(
                select(Recommendation).where(col(Recommendation.local_date) >= rec.local_date)
            ).scalars()
        }
    need = min_minutes(settings)[rec.action]
    first = SlotKey(rec.local_date, rec.slot).next()
    last_day = max(rec.local_date, target_slot(settings, now).local_date) + timedelta(
        days=RESCHEDULE_DAYS - 1
    )
    keys: list[SlotKey] = []
    key = first
    while key.local_date <= last_day:
        keys.append(key)
        key = key.next()
    if not keys:
        return None
    lo, _ = slot_bounds(keys[0], settings.tz, settings.boundaries)
    _, hi = slot_bounds(keys[-1], settings.tz, settings.boundaries)
    busy = busy_between(store, min(lo, now), hi)
    for key in keys:
        if (key.local_date, key.slot) in taken:
            continue
        free = slot_free(settings, key, busy.of(rec.action), now)
        window = window_for(rec.action, free, {rec.action: need}, settings.windows.max_minutes)
        if window is None:
            continue
        obs = json.loads(rec.observation or "{}")
        obs.update({"slot": key.slot, "day": key.day, "timestep": key.timestep})
        obs["free_minutes"] = round(longest_free_minutes(free))
        obs["available_actions"] = [rec.action]
        row = {
            "local_date": key.local_date,
            "slot": key.slot,
            "timestep": key.timestep,
            "action": rec.action,
            "belief": rec.belief,
            "belief_sd": rec.belief_sd,
            "rationale": (
                f"rescheduled from the {SlotKey(rec.local_date, rec.slot).name} of "
                f"{rec.local_date.isoformat()}: the next free window for {rec.action}"
            ),
            "runner": rec.runner,
            "runner_version": rec.runner_version,
            "observation": dumps(obs),
            "fallback_reason": None,
            "window_start": window[0],
            "window_end": window[1],
            "window_reason": None,
            "rescheduled_from": rec_id,
            "created_at": utcnow(),
        }
        return _store_recommendation(store, row)
    return None
