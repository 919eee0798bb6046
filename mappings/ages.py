"""How old something is, in words: a module of its own because the web page and `status`
show ages in a daemon that must not import pandas (the frames behind mappings/freshness)."""

from __future__ import annotations


def human_age(hours: float | None) -> str:
    """'40 min', '5 h', '3 days' (None: 'unknown')."""
    if hours is None:
        return "unknown"
    if hours < 1:
        return f"{round(hours * 60)} min"
    if hours < 48:
        return f"{round(hours)} h"
    return f"{round(hours / 24)} days"
