"""What people expect of a command line: a missing --config is an error, --version,
a source never connected says how to connect it and stores no error, one spelling per
source, Ctrl-C during an import says nothing was stored, completion, "did you mean"."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bridge.cli.main import app
from bridge.intake.sources import get_state
from bridge.store import Store
from bridge.store.models import Reading
from tests.conftest import SAMPLE
from tests.helpers import ctrl_c_reaches_it, write_config


@pytest.fixture
def cli() -> CliRunner:
    return CliRunner()


def invoke(cli: CliRunner, *args: object):
    return cli.invoke(app, [str(a) for a in args])


def test_a_config_file_that_does_not_exist_is_one_line_and_exit_2(cli, tmp_path):
    missing = tmp_path / "nope.toml"
    result = invoke(cli, "--config", missing, "status")
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: {missing}: no such config file; "
        f"write one with `rhythm-bridge --config {missing} init`"
    ]
    # The same through the environment variable.
    result = cli.invoke(app, ["status"], env={"RHYTHM_BRIDGE_CONFIG": str(missing)})
    assert result.exit_code == 2 and str(missing) in result.output
    # init is how such a file comes to exist.
    assert invoke(cli, "--config", missing, "init").exit_code == 0
    assert missing.exists()


def test_version(cli):
    result = invoke(cli, "--version")
    assert result.exit_code == 0
    assert result.output.strip() == f"rhythm-bridge {version('rhythm-bridge')}"


@pytest.mark.parametrize(("source", "auth"), [("whoop", "whoop"), ("google-calendar", "google")])
def test_a_source_never_connected_says_how_and_stores_no_error(
    cli, tmp_path, memory_keyring, store, *, source, auth
):
    section = source.replace("-", "_")
    cfg = write_config(
        tmp_path / "config.toml", tmp_path / "data", src=f"[sources.{section}]\nenabled = true"
    )
    result = invoke(cli, "--config", cfg, "sync", source)
    assert f"{section}: not connected: run `rhythm-bridge auth {auth}`" in result.output
    assert "expired" not in result.output and "revoked" not in result.output
    state = get_state(store, section)
    assert state is not None and state.status == "not_connected"
    assert state.last_error is None and state.last_error_at is None


def test_one_spelling_per_source_and_the_old_one_still_works(cli, tmp_path):
    cfg = write_config(
        tmp_path / "config.toml",
        tmp_path / "data",
        src=f'[sources.ics]\nenabled = true\nfolder = "{tmp_path}"',
    )
    (tmp_path / "data").mkdir()
    for spelling in ("apple-health", "apple_health", "google-calendar", "google_calendar"):
        result = invoke(cli, "--config", cfg, "sync", spelling)
        assert "unknown source" not in result.output, result.output
    result = invoke(cli, "--config", cfg, "sync", "applehealth")
    assert result.exit_code == 2
    assert "apple-health" in result.output and "apple_health" not in result.output


def test_did_you_mean_and_shell_completion(cli):
    result = invoke(cli, "statsu")
    assert result.exit_code == 2 and "Did you mean 'status'?" in result.output
    result = invoke(cli, "--help")
    assert "--install-completion" in result.output and "--show-completion" in result.output


@pytest.mark.sqlite_only
def test_ctrl_c_during_an_import_keeps_the_bar_and_stores_nothing(tmp_path):
    """A real SIGINT to a real terminal: the bar's last line stays and the person is told
    that nothing of the file was stored (the import is one transaction)."""
    data = tmp_path / "data"
    cfg = write_config(tmp_path / "config.toml", data)
    # An export that is read slowly, so the signal lands mid-import.
    script = tmp_path / "slow_import.py"
    script.write_text(
        "import time\n"
        "import connectors.apple_health as apple\n"
        "real = apple.read\n"
        "def slow(path, ctx):\n"
        "    for i, rec in enumerate(real(path, ctx)):\n"
        "        time.sleep(0.002)\n"
        "        yield rec\n"
        "apple.read = slow\n"
        "from bridge.cli.main import main\n"
        "main()\n"
    )
    sample = SAMPLE / "apple_health_export.zip"
    pid, fd = pty.fork()
    if pid == 0:  # the child: a terminal of its own, as a person's shell gives
        ctrl_c_reaches_it()
        os.environ["RHYTHM_BRIDGE_CONFIG"] = str(cfg)
        os.environ.pop("RHYTHM_BRIDGE_DATABASE__URL", None)
        os.environ["COLUMNS"] = "120"
        os.execv(
            sys.executable, [sys.executable, str(script), "import", "apple-health", str(sample)]
        )
    output = b""
    deadline = time.monotonic() + 60
    sent = False
    seen_bar: float | None = None
    status = None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                break
            output += chunk
        if seen_bar is None and b"records/s" in output:
            seen_bar = time.monotonic()
        # The slowed reader needs ~8 s for the sample: a second in, it is mid-file.
        if not sent and seen_bar is not None and time.monotonic() > seen_bar + 1.0:
            os.kill(pid, signal.SIGINT)
            sent = True
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status = code
            break
    else:
        os.kill(pid, signal.SIGKILL)
    if status is None:
        _, status = os.waitpid(pid, 0)
    os.close(fd)
    text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", output.decode(errors="replace"))
    assert sent, text
    assert os.WEXITSTATUS(status) == 130, text
    lines = [line.strip() for line in text.replace("\r", "\n").splitlines() if line.strip()]
    assert lines[-1] == "interrupted; nothing from this file was stored", lines[-3:]
    assert "importing apple_health_export.zip" in lines[-2] and "records" in lines[-2], lines
    store = Store(f"sqlite:///{data / 'rhythm-bridge.db'}")
    try:
        assert store.count(Reading) == 0
    finally:
        store.dispose()
    # And the same file imports fully afterwards (nothing was marked as imported).
    env = {**os.environ, "RHYTHM_BRIDGE_CONFIG": str(cfg)}
    env.pop("RHYTHM_BRIDGE_DATABASE__URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "bridge.cli", "import", "apple-health", str(sample)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0 and "already imported" not in done.stdout, done.stdout
    assert Path(data / "rhythm-bridge.db").exists()
