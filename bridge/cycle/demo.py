"""The demo: the whole pipeline on bundled sample data, no config and no network."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

from bridge.config import Settings
from bridge.cycle.run import run_cycle
from bridge.intake.ingest import ImportSummary, import_file
from bridge.intake.sources import read_context
from bridge.out.snapshot import build_snapshot
from bridge.sample_data.generate import DEMO_NOW
from bridge.store import Store


@dataclass
class DemoResult:
    snapshot: dict[str, Any]
    imports: list[ImportSummary]
    data_dir: Path | None  # None: the store was in a temporary folder, now removed


def demo_settings(data_dir: Path) -> Settings:
    return Settings.model_validate(
        {
            "timezone": "Europe/Berlin",
            "data_dir": str(data_dir),
            "sources": {"apple_health": {"enabled": False}, "ics": {"enabled": False}},
        }
    )


def run_demo(data_dir: Path | None = None) -> DemoResult:
    """Import the sample export, calendar and to-dos into a fresh store and run one cycle.

    The store is kept in `data_dir`; without one it lives in a temporary folder that is
    removed before this returns (a demo run leaves nothing behind).
    """
    if data_dir is None:
        with tempfile.TemporaryDirectory(prefix="rhythm-bridge-demo-") as tmp:
            return replace(_run_demo(Path(tmp)), data_dir=None)
    return _run_demo(Path(data_dir).expanduser())


def _run_demo(data_dir: Path) -> DemoResult:
    settings = demo_settings(data_dir)
    store = Store(settings.database_url)
    try:
        ctx = read_context(settings, DEMO_NOW)
        imports = []
        sample = files("bridge.sample_data")
        for kind, name in (
            ("apple-health", "apple_health_export.zip"),
            ("ics", "calendar.ics"),
            ("ics", "tasks.ics"),
        ):
            with as_file(sample.joinpath(name)) as path:
                imports.append(import_file(store, kind, path, ctx))
        run_cycle(settings, store, now=DEMO_NOW)
        snapshot = build_snapshot(store, settings, DEMO_NOW)
    finally:
        store.dispose()
    return DemoResult(snapshot, imports, data_dir)
