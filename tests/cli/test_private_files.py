"""Health data is private: under the usual umask 022, every folder the program creates is
0700 and every file it writes 0600 (the database and its WAL/SHM, snapshot, backup,
exports, lock, local model), and an install made by an older release is fixed once."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.files import make_private, private_dir, write_private
from tests.conftest import SAMPLE
from tests.helpers import write_config
from tests.shared import shared_path

pytestmark = pytest.mark.sqlite_only  # the files are SQLite's; PostgreSQL keeps its own


def cli(config: Path, *args: str, umask: str = "022") -> subprocess.CompletedProcess[str]:
    """`rhythm-bridge ARGS` started from a shell with this umask, as a person would."""
    command = " ".join(f"'{a}'" for a in (sys.executable, "-m", "bridge.cli", *args))
    env = {**os.environ, "RHYTHM_BRIDGE_CONFIG": str(config)}
    env.pop("RHYTHM_BRIDGE_DATABASE__URL", None)
    result = subprocess.run(
        ["sh", "-c", f"umask {umask}; exec {command}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result


def modes(root: Path) -> dict[str, str]:
    """path -> octal mode of everything under root (root included)."""
    found = {str(root): oct(stat.S_IMODE(root.stat().st_mode))}
    for path in root.rglob("*"):
        found[str(path.relative_to(root))] = oct(stat.S_IMODE(path.lstat().st_mode))
    return found


def assert_private(root: Path) -> None:
    found = modes(root)
    wrong = {
        name: mode
        for name, mode in found.items()
        if mode != ("0o700" if (root / name).is_dir() else "0o600")
    }
    assert not wrong, f"not private: {wrong}"


def test_everything_written_under_umask_022_is_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    data = home / "state" / "rhythm-bridge"  # two folders the program creates
    config = write_config(home / "config.toml", data)
    cli(config, "import", "ics", str(SAMPLE / "calendar.ics"))
    cli(config, "import", "fit", str(shared_path("garmin", "fit", "MonitoringFile.fit")))
    cli(config, "run", "--once")
    cli(config, "backup", str(home / "backups" / "nightly" / "rb.db"))
    cli(config, "export", "--out", str(home / "exports" / "latest.json"))
    cli(config, "export", "--training-data", str(home / "exports" / "train.jsonl"))
    cli(config, "train-classifier")

    assert (data / "rhythm-bridge.db").exists() and (data / "latest.json").exists()
    assert_private(home / "state")
    assert_private(home / "backups")
    assert_private(home / "exports")
    # A folder that existed before is the person's: its mode stays theirs.
    assert stat.S_IMODE(home.stat().st_mode) == 0o755


def test_the_wal_and_shm_files_are_private_while_open(tmp_path: Path) -> None:
    from sqlalchemy import text

    from bridge.store import Store

    old = os.umask(0o022)
    try:
        store = Store(f"sqlite:///{tmp_path / 'db' / 'rb.db'}")
        with store.engine.connect() as conn:
            conn.execute(text("CREATE TABLE t (x)"))
            conn.commit()
            journals = [p for p in (tmp_path / "db").iterdir() if p.name.endswith(("-wal", "-shm"))]
            assert len(journals) == 2
            assert_private(tmp_path / "db")
        store.dispose()
    finally:
        os.umask(old)


def test_an_install_from_an_older_release_is_fixed_once_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    config = write_config(tmp_path / "config.toml", data)
    cli(config, "import", "ics", str(SAMPLE / "calendar.ics"))
    # What releases before this one left behind under umask 022.
    os.chmod(data, 0o755)
    for path in data.iterdir():
        os.chmod(path, 0o644)
    first = cli(config, "status")
    assert "made" in first.stderr and "private" in first.stderr, first.stderr
    assert len(first.stderr.strip().splitlines()) == 1
    assert_private(data)
    again = cli(config, "status")
    assert "private" not in again.stderr


def test_make_private_leaves_symlinked_targets_and_counts(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    os.chmod(data, 0o755)
    outside = tmp_path / "outside.txt"
    outside.write_text("not ours")
    os.chmod(outside, 0o644)
    (data / "link").symlink_to(outside)
    (data / "db").write_text("x")
    os.chmod(data / "db", 0o644)
    assert make_private(data) == 2
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644
    assert make_private(data) == 0


def test_private_dir_and_write_private_ignore_a_lax_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        folder = private_dir(tmp_path / "a" / "b")
        write_private(folder / "f.json", b"{}")
    finally:
        os.umask(old)
    assert_private(tmp_path / "a")


def test_a_database_outside_the_data_folder_is_tightened_too(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from bridge.store import Store

    db = tmp_path / "elsewhere" / "rb.db"
    Store(f"sqlite:///{db}").dispose()
    os.chmod(db, 0o644)  # as an older release left it
    with caplog.at_level("WARNING", logger="rhythm_bridge.files"):
        Store(f"sqlite:///{db}").dispose()
        Store(f"sqlite:///{db}").dispose()
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert [r.getMessage() for r in caplog.records] == [
        f"{db}: made private to this user (0600); others could read it"
    ]
