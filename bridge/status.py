"""What `rhythm-bridge status` reports: per source state, record counts, next runs."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from bridge.config import Settings
from bridge.export import _iso
from bridge.sources import SCHEDULED, get_state, next_due
from bridge.store import Store
from bridge.store.db import schema_version
from bridge.store.models import CalendarEvent, Reading


def collect_status(settings: Settings, store: Store) -> dict[str, Any]:
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
                "last_success": _iso(state.last_success_at) if state else None,
                "last_error": state.last_error if state else None,
                "last_error_at": _iso(state.last_error_at) if state else None,
                "records": readings.get(name, 0) + events.get(name, 0),
                "next_run": _iso(due) if due else ("next cycle" if cfg.enabled else None),
                "action_needed": f"rhythm-bridge auth {name}"
                if state and state.status == "reauth_required"
                else None,
            }
        )
    last_cycle = store.get_meta("last_cycle_at")
    next_cycle = None
    if last_cycle:
        next_cycle = _iso(
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
    }
