"""What `rhythm-bridge status` reports: per source state, record counts, next runs."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlmodel import col

from bridge.config import Settings
from bridge.errors import BridgeError
from bridge.intake.push import devices
from bridge.intake.sources import SCHEDULED, get_state, next_due
from bridge.out.snapshot import iso, vendor_score_documents
from bridge.store import Store
from bridge.store.db import schema_version
from bridge.store.models import CalendarEvent, ImportedFile, Reading, Task
from connectors.registry import IMPORT_KINDS, auth_command
from mappings.vocabulary import bundled_weights, meters_fed

# Which meters each stored metric feeds, for the freshness report: the inputs of the
# bundled mappings/meter_weights.toml by the metrics mappings/vocabulary.py says they read.
METER_INPUTS: dict[str, tuple[str, ...]] = meters_fed(bundled_weights())
DAEMON_LOCK = ".daemon.lock"


@contextmanager
def daemon_lock(data_dir: Path) -> Iterator[None]:
    """Held by `rhythm-bridge run` for its lifetime: one daemon per data dir, and `status`
    can tell whether one runs (the kernel drops the lock when the process dies)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / DAEMON_LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BridgeError(
                f"another rhythm-bridge daemon is running (it holds {path}); stop it first"
            ) from None
        yield
    finally:
        os.close(fd)


def daemon_running(data_dir: Path) -> bool:
    path = data_dir / DAEMON_LOCK
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also releases the probe's own lock
    return False


# A source is "silent" when its last success is older than this many intervals.
SILENT_AFTER_INTERVALS = 2


def freshness(store: Store, now: datetime) -> list[dict[str, Any]]:
    """Per meter input: the newest data point and its age in hours (None: never seen)."""
    with store.session() as session:
        newest = dict(
            session.execute(
                select(col(Reading.metric), func.max(col(Reading.end_utc))).group_by(
                    col(Reading.metric)
                )
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


def _counts(store: Store) -> tuple[dict[str, int], dict[str, datetime]]:
    """Records per stored source name, and the last file import of each (`import`, watch)."""
    with store.session() as session:
        readings = dict(
            session.execute(
                select(col(Reading.source), func.count()).group_by(col(Reading.source))
            ).all()
        )
        events = dict(
            session.execute(
                select(col(CalendarEvent.source), func.count()).group_by(col(CalendarEvent.source))
            ).all()
        )
        by_kind = session.execute(
            select(col(ImportedFile.kind), func.max(col(ImportedFile.imported_at))).group_by(
                col(ImportedFile.kind)
            )
        ).all()
    records = {name: readings.get(name, 0) + events.get(name, 0) for name in {*readings, *events}}
    imported: dict[str, datetime] = {}
    for kind, at in by_kind:
        spec = IMPORT_KINDS.get(kind)
        if spec is not None and at is not None:
            at = at if at.tzinfo else at.replace(tzinfo=UTC)
            imported[spec.source] = max(at, imported.get(spec.source, at))
    return records, imported


def _latest(*instants: datetime | None) -> datetime | None:
    known = [t if t.tzinfo else t.replace(tzinfo=UTC) for t in instants if t is not None]
    return max(known) if known else None


def source_rows(settings: Settings, store: Store) -> list[dict[str, Any]]:
    """One row per scheduled source, then one per file source stored under its own name
    (FIT files, Garmin exports) once it holds data. A file import counts as a success."""
    records, imported = _counts(store)
    sources = []
    for name in SCHEDULED:
        cfg = getattr(settings.sources, name)
        state = get_state(store, name)
        due = next_due(store, settings, name) if cfg.enabled else None
        status = state.status if state else ("imported" if name in imported else "never")
        sources.append(
            {
                "source": name,
                "enabled": cfg.enabled,
                "status": status,
                "last_success": iso(
                    _latest(state.last_success_at if state else None, imported.get(name))
                ),
                "last_import": iso(imported.get(name)),
                "last_error": state.last_error if state else None,
                "last_error_at": iso(state.last_error_at) if state else None,
                "records": records.get(name, 0),
                "next_run": iso(due) if due else ("next cycle" if cfg.enabled else None),
                "action_needed": auth_command(name)
                if state and state.status in ("reauth_required", "not_connected")
                else None,
            }
        )
    for source in dict.fromkeys(spec.source for spec in IMPORT_KINDS.values()):
        if source in SCHEDULED or not (records.get(source) or source in imported):
            continue
        sources.append(
            {
                "source": source,
                "enabled": False,  # files only: nothing to schedule
                "status": "imported",
                "last_success": iso(imported.get(source)),
                "last_import": iso(imported.get(source)),
                "last_error": None,
                "last_error_at": None,
                "records": records.get(source, 0),
                "next_run": None,
                "action_needed": None,
            }
        )
    return sources


def collect_status(settings: Settings, store: Store, now: datetime | None = None) -> dict[str, Any]:
    now = now or datetime.now(UTC)
    sources = source_rows(settings, store)
    last_cycle = store.get_meta("last_cycle_at")
    next_cycle = None
    running = daemon_running(settings.data_path)
    if last_cycle and running:
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
        "daemon_running": running,
        "sources": sources,
        "push_devices": push_devices(settings, store),
        "freshness": freshness(store, now),
        "vendor_scores": vendor_score_documents(store, now),
        "warnings": silence_warnings(settings, store, now) + google_write_warnings(settings, store),
        "google_write": google_write_status(settings, store),
    }


def google_write_status(settings: Settings, store: Store) -> dict[str, Any] | None:
    """The last push to Google Calendar (opt-in), or None when it is off."""
    if not settings.google_write.enabled:
        return None
    from bridge.out.google_write import last_push

    return {"calendar": settings.google_write.calendar, "last_push": last_push(store)}


def google_write_warnings(settings: Settings, store: Store) -> list[str]:
    """What the person must do for the write-back to go on (a consent to give again)."""
    doc = google_write_status(settings, store)
    last = (doc or {}).get("last_push") or {}
    if last.get("status") in ("needs_consent", "retry", "error") and last.get("error"):
        return [last["error"]]
    return []


# ---- the text report ------------------------------------------------------------------


def when(value: str | datetime | None, now: datetime, tz: tzinfo) -> str:
    """An instant as local wall time with how long ago (or until): '2026-11-14 09:12 (5 days
    ago)'; 'never' for None."""
    from mappings.ages import human_age

    if value is None:
        return "never"
    at = datetime.fromisoformat(value) if isinstance(value, str) else value
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    hours = (now - at).total_seconds() / 3600
    rel = f"{human_age(hours)} ago" if hours >= 0 else f"in {human_age(-hours)}"
    if abs(hours) < 1 / 60:
        rel = "just now"
    return f"{at.astimezone(tz):%Y-%m-%d %H:%M} ({rel})"


def table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    """Left-aligned columns two spaces apart, as wide as their widest cell."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in rows
    ]


def _off_state(row: dict[str, Any]) -> str:
    """A source that is not pulled on a schedule: its files imported, or off altogether."""
    return "imported" if row.get("last_import") else "disabled"


def status_lines(doc: dict[str, Any], now: datetime, tz: tzinfo) -> list[str]:
    """`rhythm-bridge status` as text, in the configured zone."""
    lines = [
        f"database: {doc['database']} (schema {doc['schema_version']})",
        f"snapshot: {doc['snapshot']}",
        f"time zone: {doc['timezone']}",
        f"last cycle: {when(doc['last_cycle'], now, tz)}",
    ]
    if doc["daemon_running"]:
        lines.append(
            f"next cycle: {when(doc['next_cycle'], now, tz)}"
            if doc["next_cycle"]
            else "next cycle: as soon as the running daemon starts one"
        )
    else:
        lines.append("daemon: not running (start it: rhythm-bridge run, or the systemd unit)")
    lines.append("sources:")
    rows = [["source", "state", "records", "last success"]]
    notes: dict[int, list[str]] = {}
    for i, s in enumerate(doc["sources"], start=1):
        rows.append(
            [
                s["source"],
                s["status"] if s["enabled"] else _off_state(s),
                f"{s['records']:,}",
                when(s["last_success"], now, tz) if s["last_success"] else "—",
            ]
        )
        if s["last_error"]:
            notes.setdefault(i, []).append(f"last error: {s['last_error']}")
        if s["action_needed"]:
            notes.setdefault(i, []).append(f"action needed: run `{s['action_needed']}`")
    for i, line in enumerate(table(rows)):
        lines.append(line)
        lines.extend(f"      {note}" for note in notes.get(i, []))
    if doc.get("push_devices"):
        lines.append("push devices:")
        rows = [["device", "state", "last push", "records"]]
        notes = {}
        for i, d in enumerate(doc["push_devices"], start=1):
            rows.append(
                [
                    d["device"],
                    d["status"],
                    when(d["last_push"], now, tz),
                    f"{d['last_records']:,} ({d['records_total']:,} in all)",
                ]
            )
            if d["last_error"]:
                at = when(d["last_error_at"], now, tz)
                notes[i] = [f"last error ({at}): {d['last_error']}"]
        for i, line in enumerate(table(rows)):
            lines.append(line)
            lines.extend(f"      {note}" for note in notes.get(i, []))
    lines.append("data freshness:")
    rows = [["input", "newest", "feeds"]]
    for f in doc["freshness"]:
        rows.append([f["input"], when(f["newest"], now, tz), ", ".join(f["meters"])])
    lines.extend(table(rows))
    if doc.get("vendor_scores"):
        # References beside the meters, not part of them (unless the weights say so).
        lines.append("vendor scores (for reference):")
        rows = [["score", "source", "value", "when"]]
        for v in doc["vendor_scores"]:
            rows.append(
                [v["name"], v["source"], f"{v['value']:g} ({v['unit']})", when(v["at"], now, tz)]
            )
        lines.extend(table(rows))
    return lines
