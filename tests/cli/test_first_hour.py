"""What a new user meets in the first hour: folders where files were expected, the demo's
leftovers, the order of the commands in --help (issue 41)."""

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from bridge.cli.main import app
from tests.helpers import write_config


@pytest.fixture
def cfg(tmp_path):
    return write_config(tmp_path / "config.toml", tmp_path / "data")


def invoke(cfg, *args):
    return CliRunner().invoke(app, ["--config", str(cfg), *map(str, args)])


@pytest.mark.sqlite_only  # the PostgreSQL backup is pg_dump's file, not a SQLite database
def test_backup_into_an_existing_folder_writes_a_named_file(cfg, tmp_path):
    folder = tmp_path / "backups"
    folder.mkdir()
    result = invoke(cfg, "backup", folder)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    (made,) = folder.iterdir()
    assert made.name.startswith("rhythm-bridge-") and made.suffix == ".db"
    assert str(made) in result.output
    assert sqlite3.connect(made).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_export_into_an_existing_folder_writes_a_named_file(cfg, tmp_path):
    folder = tmp_path / "exports"
    folder.mkdir()
    result = invoke(cfg, "export", "--out", folder)
    assert result.exit_code == 0, result.output
    (made,) = folder.iterdir()
    assert made.name.startswith("snapshot-") and made.suffix == ".json"
    assert json.loads(made.read_text())["schema"].startswith("rhythm-bridge/snapshot@")
    result = invoke(cfg, "export", "--training-data", folder)
    assert result.exit_code == 0, result.output
    assert (folder / "training-data.jsonl").is_file()
