"""Small helpers shared by the CLI, pipeline and daemon tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jsonschema
from keyring.backend import KeyringBackend

SCHEMA_PATH = Path(__file__).parent.parent / "bridge" / "schemas" / "snapshot.schema.json"


def validate_snapshot(doc: dict[str, Any]) -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(doc)


def ctrl_c_reaches_it() -> None:
    """In a child before exec: Ctrl-C back to its default.

    A shell starts background jobs with SIGINT ignored, a process inherits that, and
    Python then never raises KeyboardInterrupt; a test of what Ctrl-C does would then
    pass or fail with how the test run itself was started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def write_config(path: Path, data_dir: Path, **sections: str) -> Path:
    """A config file for a store in data_dir; extra TOML sections by name."""
    text = f'timezone = "Europe/Berlin"\ndata_dir = "{data_dir}"\n'
    for body in sections.values():
        text += body + "\n"
    path.write_text(text)
    return path


@contextmanager
def cli_process(
    config: Path, *args: str, quiet: bool = False, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[str]]:
    """`rhythm-bridge ARGS` as a subprocess with this config; killed if still running after."""
    full_env = {**os.environ, "RHYTHM_BRIDGE_CONFIG": str(config), **(env or {})}
    out = subprocess.DEVNULL if quiet else subprocess.PIPE
    proc = subprocess.Popen(
        [sys.executable, "-m", "bridge.cli", *args],
        env=full_env,
        stdout=out,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def wait_until(predicate: Callable[[], bool], proc: subprocess.Popen[str], timeout: float) -> None:
    """Poll until predicate() holds; fail if the process exits or time runs out first."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert proc.poll() is None, f"the process exited early with {proc.returncode}"
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def wal_bigger_than(data_dir: Path, size: int = 2_000_000) -> Callable[[], bool]:
    """True once the SQLite WAL has grown past `size`: uncommitted pages spill into it, so a
    big WAL means a long transaction is mid-way."""
    wal = data_dir / "rhythm-bridge.db-wal"
    return lambda: wal.exists() and wal.stat().st_size > size


class MemoryKeyring(KeyringBackend):
    """An in-memory keyring backend so no test touches the machine's real keyring."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        from keyring.errors import PasswordDeleteError

        if self.entries.pop((service, username), None) is None:
            raise PasswordDeleteError(username)


def meter_snapshot(store: Any, day: Any, slot: int) -> Any:
    """The stored MeterSnapshot row of one local slot."""
    from sqlalchemy import select

    from bridge.store.models import MeterSnapshot

    with store.session() as session:
        return session.execute(
            select(MeterSnapshot).where(MeterSnapshot.local_date == day, MeterSnapshot.slot == slot)
        ).scalar_one()


def calendar_event(
    uid: str, title: str, start: Any, minutes: float = 60, *, source: str = "ics", **fields: Any
) -> Any:
    """A stored calendar event row (not yet added): `fields` set any other column."""
    from datetime import timedelta

    from bridge.store.models import CalendarEvent

    values: dict[str, Any] = {
        "calendar_id": "/cal/personal.ics",
        "content_hash": uid,
        "updated_at": start,
        **fields,
    }
    return CalendarEvent(
        source=source,
        uid=uid,
        title=title,
        start_utc=start,
        end_utc=start + timedelta(minutes=minutes),
        **values,
    )
