"""Which slot it is now, and which one to recommend for: the slot helpers every stage uses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bridge.config import Settings
from mappings.slots import SlotKey, slot_bounds, slot_of_instant


def current_slot(settings: Settings, now: datetime) -> SlotKey:
    return slot_of_instant(now, settings.tz, settings.boundaries)


def target_slot(settings: Settings, now: datetime) -> SlotKey:
    """The slot to recommend for: this one, or the next when this one is nearly over."""
    key = current_slot(settings, now)
    _, end = slot_bounds(key, settings.tz, settings.boundaries)
    if end - now.astimezone(UTC) < timedelta(minutes=settings.schedule.recommend_lead_minutes):
        return key.next()
    return key
