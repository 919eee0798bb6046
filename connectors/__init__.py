"""Connectors: one module per source, each yielding normalized records (see `base`)."""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

# CLI kind -> module. Imported lazily so `rhythm-bridge --help` stays fast.
FILE_SOURCES: dict[str, str] = {
    "apple-health": "connectors.apple_health",
    "garmin-export": "connectors.garmin_export",
    "fit": "connectors.fit",
    "ics": "connectors.ics",
}


def file_source(kind: str) -> ModuleType:
    """The module behind an import kind; ValueError lists the known kinds."""
    try:
        return import_module(FILE_SOURCES[kind])
    except KeyError:
        known = ", ".join(sorted(FILE_SOURCES))
        raise ValueError(f"unknown import kind {kind!r}; choose one of: {known}") from None
