"""The stored meter history as series: for `meters --from/--to --csv`, the history page
and its JSON API (daily values with the range of their slots, the inputs behind them,
the answers given)."""

from __future__ import annotations

import csv
import io
from datetime import date
from typing import Any

from sqlalchemy import func, select

from bridge.store import Store
from bridge.store.models import MeterSnapshot
from mappings.actions import METERS


def stored_range(store: Store) -> tuple[date, date] | None:
    """The first and last local date with stored meters (None: none yet)."""
    with store.session() as session:
        lo, hi = session.execute(
            select(func.min(MeterSnapshot.local_date), func.max(MeterSnapshot.local_date))
        ).one()
    return (lo, hi) if lo is not None else None


CSV_COLUMNS = (
    "date",
    "slot",
    "slot_name",
    "timestep",
    *METERS,
    *(f"{m}_confidence" for m in METERS),
    *(f"{m}_age_hours" for m in METERS),
    *(f"{m}_stale" for m in METERS),
)


def slots_csv(rows: list[dict[str, Any]]) -> str:
    """Slot documents as CSV, one row per slot (empty cells for null values)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        fresh = row.get("freshness") or {}
        writer.writerow(
            [
                row["date"],
                row["slot"],
                row["slot_name"],
                row["timestep"],
                *(row[m] for m in METERS),
                *(row["confidence"][m] for m in METERS),
                *((fresh.get(m) or {}).get("age_hours") for m in METERS),
                *(_flag((fresh.get(m) or {}).get("stale")) for m in METERS),
            ]
        )
    return out.getvalue()


def _flag(value: bool | None) -> str:
    return "" if value is None else str(value).lower()
