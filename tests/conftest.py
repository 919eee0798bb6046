"""Shared fixtures: a fresh store per test, the person's settings, and fixture paths.

With RB_TEST_DATABASE_URL set (a PostgreSQL admin URL), every test gets its own fresh
PostgreSQL database instead of a SQLite file, and tests marked `sqlite_only` are skipped:
the same code and tests run against both backends (`make test-postgres`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, event

from bridge.config import Settings
from bridge.store import Store
from connectors.base import ReadContext
from tests.people import unscoped

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).parent.parent
SAMPLE = ROOT / "bridge" / "sample_data"
BERLIN = ZoneInfo("Europe/Berlin")
DEMO_NOW = datetime(2026, 11, 19, 8, 40, tzinfo=BERLIN)


PG_ADMIN_URL = os.environ.get("RB_TEST_DATABASE_URL", "")


@event.listens_for(Engine, "before_cursor_execute")
def _every_read_names_its_person(
    conn: Any, _cursor: Any, statement: str, _params: Any, _context: Any, _many: bool
) -> None:
    # The whole suite runs with this check: a statement that reads, changes or deletes a
    # person's rows without naming the person would mix people; migrations are exempt.
    if conn.info.get("migrating"):
        return
    problem = unscoped(statement)
    if problem:
        raise AssertionError(f"{problem}: {statement[:300]}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if PG_ADMIN_URL:
        skip = pytest.mark.skip(reason="SQLite-specific; this run is against PostgreSQL")
        for item in items:
            if "sqlite_only" in item.keywords:
                item.add_marker(skip)


@pytest.fixture
def database_url(tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database for this test: a SQLite file, or a new PostgreSQL database."""
    if not PG_ADMIN_URL:
        yield f"sqlite:///{tmp_path / 'data' / 'rhythm-bridge.db'}"
        return
    from sqlalchemy import create_engine, make_url, text

    name = f"rb_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, database_url: str) -> None:
    # Nothing a test does may read or write the real user's config or data.
    for name in list(os.environ):
        if name.startswith("RHYTHM_BRIDGE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    if PG_ADMIN_URL:
        # CLI runs and daemon subprocesses read their database from the environment too.
        monkeypatch.setenv("RHYTHM_BRIDGE_DATABASE__URL", database_url)


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return Settings.model_validate(
        {
            "timezone": "Europe/Berlin",
            "data_dir": str(tmp_path / "data"),
            "database": {"url": database_url if PG_ADMIN_URL else ""},
        }
    )


@pytest.fixture
def store(settings: Settings):
    s = Store(settings.database_url)
    yield s
    s.dispose()


@pytest.fixture
def ctx() -> ReadContext:
    return ReadContext(tz=BERLIN, now=DEMO_NOW)


@pytest.fixture(autouse=True)
def cli_state():
    """The CLI caches settings and the store per process; every test starts clean."""
    from bridge.cli.core import state as _state

    _state.clear()
    yield _state
    if _state.get("store") is not None:
        _state["store"].dispose()
    _state.clear()


# The web, notify and implicit-feedback fixtures (demo store copy, in-memory keyring).
from tests.web.web_fixtures import demo, demo_db, memory_keyring  # noqa: E402, F401


@pytest.fixture(scope="session")
def rhythm_model(tmp_path_factory) -> str:
    """A bundled model trained on the rhythm family alone (600 people, seed 0).

    The shipped model is trained on a mixture of simulator families (model version 3); the
    tests that check what a model learns about the rhythm simulator in particular use
    this one, as the shipped model did before the mixture.
    """
    from bridge.sim.train import train

    path = tmp_path_factory.mktemp("rhythm-model") / "rhythm.npz"
    train(path, seed=0, n_people=600, families=("rhythm",))
    return str(path)
