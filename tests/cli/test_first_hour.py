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


def test_help_lists_commands_in_the_order_a_person_uses_them():
    from bridge.cli.core import COMMAND_ORDER

    result = CliRunner().invoke(app, ["--help"])
    listed = [
        line.split()[0]
        for line in result.output.split("Commands:", 1)[1].splitlines()
        if line.startswith("  ") and line.split()
    ]
    assert listed[:4] == ["init", "demo", "run", "status"]
    assert listed[-4:] == ["train-classifier", "train-model", "train-transfer", "eval"]
    # A new command is placed on purpose, not left to the order modules are imported in.
    assert sorted(listed) == sorted(COMMAND_ORDER)


def test_export_help_names_the_schema_version_it_writes(cfg):
    from bridge.out.snapshot import SCHEMA_ID

    assert SCHEMA_ID != "rhythm-bridge/snapshot@1"
    result = CliRunner().invoke(app, ["export", "--help"])
    assert f"(schema {SCHEMA_ID})" in " ".join(result.output.split())
    doc = json.loads(invoke(cfg, "export").stdout)
    assert doc["schema"] == SCHEMA_ID


def test_the_example_config_names_the_notify_token_command():
    from bridge.config import starter_config

    text = starter_config()
    assert "rhythm-bridge notify-token" in text


def test_demo_leaves_no_temporary_folder_behind_unless_asked(tmp_path, monkeypatch):
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    result = CliRunner().invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    assert list(scratch.iterdir()) == []
    assert "removed (keep it with --keep DIR)" in result.output
    result = CliRunner().invoke(app, ["demo", "--json"])
    assert result.exit_code == 0, result.output
    assert list(scratch.iterdir()) == []
    json.loads(result.stdout)
    # --keep DIR keeps it and says where, also with --json (on stderr: stdout is the document).
    kept = tmp_path / "kept"
    result = CliRunner().invoke(app, ["demo", "--json", "--keep", str(kept)])
    assert result.exit_code == 0, result.output
    assert (kept / "rhythm-bridge.db").is_file() and (kept / "latest.json").is_file()
    assert f"kept in {kept}" in result.stderr
    json.loads(result.stdout)


def test_the_unit_the_steps_the_docs_and_the_example_config_name_the_same_paths(
    tmp_path, monkeypatch
):
    import re
    import shutil

    from bridge.cli.ops import CONFIG_DIR, CONFIG_FILE, DATA_DIR, KEY_FILE
    from tests.conftest import ROOT

    # As installed the documented way: /usr/local/bin/rhythm-bridge on root's PATH.
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/local/bin/{name}")
    unit_path = tmp_path / "rhythm-bridge.service"
    result = CliRunner().invoke(app, ["install-service", "--path", str(unit_path)])
    assert result.exit_code == 0, result.output
    unit = unit_path.read_text()
    credential = f"LoadCredential=keyring-key:{KEY_FILE}"
    assert credential in unit
    assert f"Environment=RHYTHM_BRIDGE_CONFIG={CONFIG_FILE}" in unit
    assert "ExecStart=/usr/local/bin/rhythm-bridge run" in unit
    # No made-up documentation link, and no ConfigurationDirectory= (it would not give an
    # existing /etc/rhythm-bridge to the service's group).
    assert "example.invalid" not in unit
    assert not re.search(r"^(Documentation|ConfigurationDirectory)=", unit, re.M)
    steps = [line.strip() for line in result.output.split("next:\n", 1)[1].splitlines()]
    steps = [s for s in steps if s.startswith(("sudo", "journalctl"))]
    # The config is written by `init` (no config.toml the person may not have is copied),
    # opened to the service's group, and the key made root's alone.
    assert f"sudo /usr/local/bin/rhythm-bridge --config {CONFIG_FILE} init" in steps
    assert f"sudo install -d -m 0750 -o root -g rhythm-bridge {CONFIG_DIR}" in steps
    assert not any("cp config.toml" in s for s in steps)
    readme = (ROOT / "README.md").read_text()
    guide = (ROOT / "docs" / "guides" / "service.md").read_text()
    for page in (readme, guide):
        for step in steps:
            assert step in page, step  # the pages show the steps exactly as printed
    texts = {
        "README.md": readme,
        "docs/guides/service.md": guide,
        "docs/reference/settings.md": (ROOT / "docs" / "reference" / "settings.md").read_text(),
        "config.example.toml": (ROOT / "config.example.toml").read_text(),
        "bridge/config.example.toml": (ROOT / "bridge" / "config.example.toml").read_text(),
        "bridge/auth/secrets.py": (ROOT / "bridge" / "auth" / "secrets.py").read_text(),
        "the unit": unit,
    }
    allowed = {CONFIG_DIR, CONFIG_FILE, KEY_FILE, DATA_DIR}
    for name, text in texts.items():
        named = set(re.findall(r"/etc/rhythm-bridge[\w./-]*", text))
        assert {p.rstrip(".") for p in named} <= allowed, (name, named - allowed)
        for mention in re.findall(r"LoadCredential=keyring-key:[^\s`'\")]*", text):
            assert mention == credential, (name, mention)
    for name in ("README.md", "docs/guides/service.md", "config.example.toml"):
        assert credential in texts[name], name


def test_a_new_user_is_told_the_next_step_after_init_and_after_an_empty_cycle(tmp_path):
    cfg = tmp_path / "new" / "config.toml"
    result = CliRunner().invoke(app, ["--config", str(cfg), "init"])
    assert result.exit_code == 0, result.output
    # The starter config has every source off: `run --once` alone would compute nothing.
    assert "every source in it is off" in result.output
    assert "rhythm-bridge import apple-health" in result.output
    cfg = write_config(tmp_path / "config.toml", tmp_path / "data")
    result = invoke(cfg, "run", "--once")
    assert result.exit_code == 0, result.output
    assert "no data yet" in result.output and "rhythm-bridge import KIND PATH" in result.output


def test_importing_a_folder_as_a_file_says_it_is_a_folder(cfg, tmp_path):
    result = invoke(cfg, "import", "fit", tmp_path)
    assert result.exit_code == 2
    assert "a folder; give the fit file itself" in result.output
    assert "no such file" not in result.output


def test_a_path_through_a_file_is_one_line_not_a_traceback(cfg, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("")
    for args in (
        ["backup", afile / "x.db"],
        ["export", "--out", afile / "x.json"],
        ["export", "--training-data", afile / "x.jsonl"],
        ["demo", "--keep", afile / "demo"],
    ):
        result = invoke(cfg, *args)
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output and result.exception is not None
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, result.output)
        assert str(afile) in lines[0]


def test_the_quickstart_says_how_to_give_the_keyring_key_that_tokens_need(tmp_path):
    from bridge.auth.secrets import EncryptedFileKeyring
    from bridge.errors import ConfigError
    from tests.conftest import ROOT

    for page in (ROOT / "README.md", ROOT / "docs" / "index.md"):
        quickstart = page.read_text().split("## Quickstart", 1)[1].split("\n## ", 1)[0]
        assert "RHYTHM_BRIDGE_KEYRING_KEY" in quickstart and "openssl rand" in quickstart, page
    # And the one line a token command stops with says the same, with the service's path.
    with pytest.raises(ConfigError) as caught:
        EncryptedFileKeyring(tmp_path / "secrets.keyring")._material()
    message = str(caught.value)
    assert "openssl rand -base64 32" in message
    assert "LoadCredential=keyring-key:/etc/rhythm-bridge/keyring.key" in message


def test_install_service_from_a_checkout_says_to_install_it_for_real(tmp_path, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name: f"/home/me/rhythm-bridge/.venv/bin/{name}")
    unit = tmp_path / "rhythm-bridge.service"
    result = CliRunner().invoke(app, ["install-service", "--path", str(unit)])
    assert result.exit_code == 0, result.output
    assert "Install it for real" in result.stderr
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/local/bin/{name}")
    result = CliRunner().invoke(app, ["install-service", "--path", str(unit)])
    assert result.stderr == ""
