"""Fixtures for the web, notify and implicit-feedback tests: a demo store and a fake keyring."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.core
import pytest

from bridge.config import Settings
from bridge.cycle.demo import demo_settings, run_demo
from bridge.store import Store
from tests.helpers import MemoryKeyring


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    before = keyring.core._keyring_backend
    ring = MemoryKeyring()
    keyring.set_keyring(ring)
    yield ring
    keyring.core._keyring_backend = before


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo pipeline's store, built once; tests get their own copy."""
    data = tmp_path_factory.mktemp("demo")
    run_demo(data)
    return data / "rhythm-bridge.db"


@pytest.fixture
def demo(tmp_path: Path, demo_db: Path) -> Iterator[tuple[Settings, Store]]:
    data = tmp_path / "demo-data"
    data.mkdir()
    shutil.copy(demo_db, data / "rhythm-bridge.db")
    settings = demo_settings(data)
    store = Store(settings.database_url)
    yield settings, store
    store.dispose()
