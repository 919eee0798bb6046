"""Serving for real: `serve`, the daemon with [web] enabled, the token commands."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest
from typer.testing import CliRunner

from bridge.cli.main import app
from tests.conftest import SAMPLE
from tests.helpers import write_config

# Subprocesses get keyring's own null / fail backends: never the machine's real keyring.
NULL_KEYRING = "keyring.backends.null.Keyring"
FAIL_KEYRING = "keyring.backends.fail.Keyring"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: list[str], cfg, keyring_backend: str = NULL_KEYRING) -> subprocess.Popen:
    env = {
        **os.environ,
        "RHYTHM_BRIDGE_CONFIG": str(cfg),
        "PYTHON_KEYRING_BACKEND": keyring_backend,
    }
    return subprocess.Popen(
        [sys.executable, "-m", "bridge.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for(url: str, proc: subprocess.Popen, timeout: float = 60) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            return httpx.get(url, timeout=2)
        except httpx.TransportError:
            time.sleep(0.2)
    raise AssertionError(f"{url} never answered")


def stop(proc: subprocess.Popen) -> str:
    try:
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return output


def test_serve_answers_on_loopback_and_stops_on_sigterm(tmp_path):
    port = free_port()
    cfg = write_config(tmp_path / "c.toml", tmp_path / "data", web=f"[web]\nport = {port}")
    proc = start(["serve"], cfg)
    try:
        assert wait_for(f"http://127.0.0.1:{port}/healthz", proc).json() == {"ok": True}
        status = httpx.get(f"http://127.0.0.1:{port}/api/status", timeout=5)
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
    finally:
        output = stop(proc)
    assert proc.returncode == 0, output
    assert status.status_code == 200 and "sources" in status.json()
    assert page.status_code == 200 and "No recommendation yet" in page.text
    assert f"serving http://127.0.0.1:{port}/" in output


def test_serving_on_the_lan_without_a_keyring_is_one_clear_error(tmp_path):
    import keyring
    import keyring.core
    from keyring.backends.fail import Keyring as FailKeyring

    cfg = write_config(tmp_path / "c.toml", tmp_path / "data")
    before = keyring.core._keyring_backend
    keyring.set_keyring(FailKeyring())
    try:
        result = CliRunner().invoke(
            app, ["--config", str(cfg), "serve", "--host", "0.0.0.0", "--port", str(free_port())]
        )
    finally:
        keyring.core._keyring_backend = before
    assert result.exit_code == 2
    # No desktop keyring: the token would go to the encrypted-file keyring, which has no key
    # here, and the one line says how to give it one.
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("error: no key for the encrypted keyring")
    assert "RHYTHM_BRIDGE_KEYRING_KEY" in last and "LoadCredential=keyring-key" in last


def test_a_busy_port_is_one_clear_error(settings, store, memory_keyring):
    from bridge.errors import ConfigError
    from bridge.web.server import BackgroundServer

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        with pytest.raises(ConfigError, match=rf"cannot listen on 127.0.0.1:{port}"):
            BackgroundServer(settings, store, host="127.0.0.1", port=port)


def test_the_daemon_serves_the_page_next_to_the_scheduler(tmp_path):
    port = free_port()
    cfg = write_config(
        tmp_path / "c.toml",
        tmp_path / "data",
        ics=f'[sources.ics]\nenabled = true\npaths = ["{SAMPLE / "calendar.ics"}"]',
        web=f"[web]\nenabled = true\nport = {port}",
    )
    snapshot = tmp_path / "data" / "latest.json"
    proc = start(["run"], cfg)
    try:
        wait_for(f"http://127.0.0.1:{port}/healthz", proc)
        deadline = time.monotonic() + 60
        while not snapshot.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        rec = httpx.get(f"http://127.0.0.1:{port}/api/recommendation", timeout=5).json()
    finally:
        output = stop(proc)
    assert proc.returncode == 0, output
    assert rec["recommendation"] is not None and rec["recommendation"]["id"] == 1
    assert "daemon stopped" in output
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)


def test_web_token_prints_the_same_token_until_rotated(memory_keyring, tmp_path):
    cli = CliRunner()
    first = cli.invoke(app, ["web-token"])
    again = cli.invoke(app, ["web-token"])
    rotated = cli.invoke(app, ["web-token", "--rotate"])
    assert first.exit_code == 0 and len(first.output.strip()) >= 40
    assert again.output == first.output != rotated.output
    assert memory_keyring.get_password("rhythm-bridge", "web-access-token") == (
        rotated.output.strip()
    )


def test_notify_token_goes_to_the_keyring_without_echo(memory_keyring):
    cli = CliRunner()
    result = cli.invoke(app, ["notify-token"], input="s3cret\n")
    assert result.exit_code == 0 and "s3cret" not in result.output
    assert memory_keyring.get_password("rhythm-bridge", "ntfy-token") == "s3cret"
    assert cli.invoke(app, ["notify-token", "--clear"]).exit_code == 0
    assert memory_keyring.get_password("rhythm-bridge", "ntfy-token") is None
