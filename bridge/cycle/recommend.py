"""The cycle's recommendation step: the runner's view of the coming slot, and its answer."""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

from sqlalchemy import select

from bridge.clock import target_slot
from bridge.config import Settings
from bridge.errors import BridgeError
from bridge.learning.history import interaction_history
from bridge.store import Store, upsert
from bridge.store.db import dumps, utcnow
from bridge.store.models import CalendarEvent, MeterSnapshot, Recommendation
from mappings.actions import ACTIONS, METERS
from mappings.slots import SlotKey, slot_bounds

log = logging.getLogger("rhythm_bridge.cycle")


def observation_for(
    store: Store, settings: Settings, key: SlotKey, now: datetime
) -> dict[str, Any]:
    """The runner's view of a slot: the latest meters at or before it, plus the active event."""
    with store.session() as session:
        snap = session.execute(
            select(MeterSnapshot)
            .where(
                (MeterSnapshot.local_date < key.local_date)
                | ((MeterSnapshot.local_date == key.local_date) & (MeterSnapshot.slot <= key.slot))
            )
            .order_by(MeterSnapshot.local_date.desc(), MeterSnapshot.slot.desc())
            .limit(1)
        ).scalar_one_or_none()
        lo, hi = slot_bounds(key, settings.tz, settings.boundaries)
        event = session.execute(
            select(CalendarEvent.action)
            .where(
                CalendarEvent.start_utc < hi,
                CalendarEvent.end_utc > lo,
                CalendarEvent.status != "cancelled",
                CalendarEvent.all_day.is_(False),
                CalendarEvent.action.in_(ACTIONS),
            )
            .order_by(CalendarEvent.start_utc)
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
    return obs


def configured_runner(settings: Settings, name: str | None = None) -> Any:
    """The runner the config names, built with its options; a bad option is a config error."""
    from bridge.runner import load_runner

    name = name or settings.runner.name
    options = dict(settings.runner.options) if name == settings.runner.name else {}
    adapter = settings.data_path / "adapter.json"
    if name == "bundled" and "adapter" not in options and adapter.exists():
        try:  # written by the weekly refit (bridge.learning.adapter)
            return load_runner(name, **options, adapter=str(adapter))
        except BridgeError as err:  # a broken adapter must not stop recommendations
            log.warning("ignoring the adapter: %s", err)
    try:
        return load_runner(name, **options)
    except (ValueError, TypeError) as err:
        raise BridgeError(f"config key 'runner': {err}") from None


def recommend(
    store: Store, settings: Settings, now: datetime, *, runner_name: str | None = None
) -> Recommendation:
    """The recommendation for the coming slot; made once per slot and then kept."""
    key = target_slot(settings, now)
    with store.session() as session:
        existing = session.execute(
            select(Recommendation).where(
                Recommendation.local_date == key.local_date, Recommendation.slot == key.slot
            )
        ).scalar_one_or_none()
    if existing is not None:
        return existing
    obs = observation_for(store, settings, key, now)
    runner = configured_runner(settings, runner_name)
    history = interaction_history(store, key, after=getattr(runner, "history_since", None))
    rec = runner.recommend(obs, history)
    row = {
        "local_date": key.local_date,
        "slot": key.slot,
        "timestep": key.timestep,
        "action": rec.action,
        "belief": json.dumps(rec.belief),
        "rationale": rec.rationale,
        "runner": rec.runner,
        "runner_version": rec.runner_version,
        "observation": dumps(obs),
        "fallback_reason": rec.fallback_reason,
        "created_at": utcnow(),
    }
    with store.transaction() as session:
        upsert(session, Recommendation, [row], keys=("local_date", "slot"))
        return session.execute(
            select(Recommendation).where(
                Recommendation.local_date == key.local_date, Recommendation.slot == key.slot
            )
        ).scalar_one()
