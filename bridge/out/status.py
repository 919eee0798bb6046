"""What `rhythm-bridge status` reports: per source state, record counts, next runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from bridge.config import Settings
from bridge.errors import auth_command
from bridge.intake.push import devices
from bridge.intake.sources import SCHEDULED, get_state, next_due
from bridge.out.snapshot import iso
from bridge.store import Store
from bridge.store.db import schema_version
from bridge.store.models import CalendarEvent, Reading, Task

# Which meters each stored metric feeds, for the freshness report (the inputs of
# mappings/meter_weights.toml by the metric they are computed from; a test keeps the two
# in step).
METER_INPUTS: dict[str, tuple[str, ...]] = {
    "sleep": ("vitality", "cognition"),
    "hrv_sdnn": ("vitality", "serenity"),
    "hrv_rmssd": ("vitality", "serenity"),
    "resting_hr": ("vitality",),
    "steps": ("vitality",),
    "stress": ("serenity",),
    "recovery": ("vitality", "serenity"),
    "body_battery": ("vitality",),
    "workout": ("vitality",),
    "mindful": ("serenity",),
    "calendar": ("cognition", "progress", "serenity", "connection"),
    "tasks": ("progress",),
}
# A source is "silent" when its last success is older than this many intervals.
SILENT_AFTER_INTERVALS = 2


def freshness(store: Store, now: datetime) -> list[dict[str, Any]]:
    """Per meter input: the newest data point and its age in hours (None: never seen)."""
    with store.session() as session:
        newest = dict(
            session.execute(
                select(Reading.metric, func.max(Reading.end_utc)).group_by(Reading.metric)
            ).all()
        )
        newest["calendar"] = session.execute(
            select(func.max(CalendarEvent.updated_at))
        ).scalar_one_or_none()
        newest["tasks"] = session.execute(select(func.max(Task.updated_at))).scalar_one_or_none()
    out = []
    for metric, meters in METER_INPUTS.items():
        last = newest.get(metric)
        out.append(
            {
                "input": metric,
                "meters": list(meters),
                "newest": iso(last),
                "age_hours": round((now - last).total_seconds() / 3600, 1) if last else None,
            }
        )
    return out


def silence_warnings(settings: Settings, store: Store, now: datetime) -> list[str]:
    """One line per enabled source that has not succeeded for longer than expected."""
    warnings = []
    for name in SCHEDULED:
        cfg = getattr(settings.sources, name)
        state = get_state(store, name)
        if not cfg.enabled or state is None or state.last_attempt_at is None:
            continue
        expected = timedelta(
            minutes=cfg.interval_minutes * SILENT_AFTER_INTERVALS + settings.schedule.cycle_minutes
        )
        if state.last_success_at is None:
            warnings.append(
                f"{name}: has never synced successfully (last error: {state.last_error})"
            )
        elif now - state.last_success_at > expected:
            hours = (now - state.last_success_at).total_seconds() / 3600
            warnings.append(
                f"{name}: silent for {hours:.1f} h, expected every "
                f"{cfg.interval_minutes} min (last error: {state.last_error or 'none'})"
            )
    return warnings


def push_devices(settings: Settings, store: Store) -> list[dict[str, Any]]:
    """Each phone that pushes Apple data: its last push, records, last error."""
    if not settings.push.enabled:
        return []
    return [
        {
            **d,
            "last_push": iso(d["last_push"]),
            "last_error_at": iso(d["last_error_at"]),
        }
        for d in devices(store)
    ]


def collect_status(settings: Settings, store: Store, now: datetime | None = None) -> dict[str, Any]:
    now = now or datetime.now(UTC)
    with store.session() as session:
        readings = dict(
            session.execute(select(Reading.source, func.count()).group_by(Reading.source)).all()
        )
        events = dict(
            session.execute(
                select(CalendarEvent.source, func.count()).group_by(CalendarEvent.source)
            ).all()
        )
    sources = []
    for name in SCHEDULED:
        cfg = getattr(settings.sources, name)
        state = get_state(store, name)
        due = next_due(store, settings, name) if cfg.enabled else None
        sources.append(
            {
                "source": name,
                "enabled": cfg.enabled,
                "status": state.status if state else "never",
                "last_success": iso(state.last_success_at) if state else None,
                "last_error": state.last_error if state else None,
                "last_error_at": iso(state.last_error_at) if state else None,
                "records": readings.get(name, 0) + events.get(name, 0),
                "next_run": iso(due) if due else ("next cycle" if cfg.enabled else None),
                "action_needed": auth_command(name)
                if state and state.status in ("reauth_required", "not_connected")
                else None,
            }
        )
    last_cycle = store.get_meta("last_cycle_at")
    next_cycle = None
    if last_cycle:
        next_cycle = iso(
            datetime.fromisoformat(last_cycle) + timedelta(minutes=settings.schedule.cycle_minutes)
        )
    return {
        "database": store.display_url,
        "schema_version": schema_version(store.engine),
        "data_dir": str(settings.data_path),
        "snapshot": str(settings.export_path),
        "timezone": str(settings.tz),
        "last_cycle": last_cycle,
        "next_cycle": next_cycle,
        "sources": sources,
        "push_devices": push_devices(settings, store),
        "freshness": freshness(store, now),
        "warnings": silence_warnings(settings, store, now),
    }
