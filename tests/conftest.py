"""Shared fixtures: a fresh store per test, the person's settings, and fixture paths."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bridge.config import Settings
from bridge.store import Store
from connectors.base import ReadContext

FIXTURES = Path(__file__).parent / "fixtures"
SAMPLE = Path(__file__).parent.parent / "bridge" / "sample_data"
BERLIN = ZoneInfo("Europe/Berlin")
DEMO_NOW = datetime(2026, 11, 19, 8, 40, tzinfo=BERLIN)


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Nothing a test does may read or write the real user's config or data.
    for name in list(__import__("os").environ):
        if name.startswith("RHYTHM_BRIDGE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.model_validate(
        {"timezone": "Europe/Berlin", "data_dir": str(tmp_path / "data")}
    )


@pytest.fixture
def store(settings: Settings):
    s = Store(settings.database_url)
    yield s
    s.dispose()


@pytest.fixture
def ctx() -> ReadContext:
    return ReadContext(tz=BERLIN, now=DEMO_NOW)


@pytest.fixture
def cli_state():
    """The CLI caches settings and the store per process; each CLI test starts clean."""
    from bridge.cli import _state

    _state.clear()
    yield _state
    if _state.get("store") is not None:
        _state["store"].dispose()
    _state.clear()
