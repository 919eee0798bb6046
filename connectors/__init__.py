"""Connectors: one module per source, each yielding normalized records (see `base`)."""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from connectors.registry import IMPORT_KINDS

# CLI kind -> module. Imported lazily so `rhythm-bridge --help` stays fast.
FILE_SOURCES: dict[str, str] = {kind: spec.module for kind, spec in IMPORT_KINDS.items()}


def file_source(kind: str) -> ModuleType:
    """The module behind an import kind; ValueError lists the known kinds."""
    try:
        return import_module(FILE_SOURCES[kind])
    except KeyError:
        known = ", ".join(sorted(FILE_SOURCES))
        raise ValueError(f"unknown import kind {kind!r}; choose one of: {known}") from None
