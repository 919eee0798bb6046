"""Operations: systemd notification, logging with redaction, status freshness, backups."""

import io
import json
import logging
import os
import socket
import sqlite3
import sys
import threading
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from bridge.cli.main import app
from bridge.daemon.scheduler import MAX_CYCLE_SECONDS, CycleTracker
from bridge.daemon.systemd import sd_notify, watchdog_interval
from bridge.intake.ingest import import_file
from bridge.intake.sources import SyncOutcome, record_outcome
from bridge.logs import MASK, JsonFormatter, RedactingFilter, redact, register_secret
from bridge.out.backup import backup
from bridge.out.status import collect_status
from bridge.store import Store
from bridge.store.models import Reading
from tests.conftest import SAMPLE


@pytest.fixture
def notify_socket(tmp_path, monkeypatch):
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(5)
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    yield sock
    sock.close()


def test_sd_notify_reaches_the_socket(notify_socket):
    assert sd_notify("READY=1") is True
    assert notify_socket.recv(256) == b"READY=1"


def test_sd_notify_is_a_no_op_without_systemd(monkeypatch):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert sd_notify("READY=1") is False


def test_watchdog_interval_is_half_of_watchdog_sec(monkeypatch):
    monkeypatch.setenv("WATCHDOG_USEC", "600000000")
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    assert watchdog_interval() == 300.0
    monkeypatch.setenv("WATCHDOG_PID", "1")  # meant for another process
    assert watchdog_interval() is None


def test_a_hung_cycle_stops_the_watchdog():
    tracker = CycleTracker()
    assert tracker.healthy()
    tracker.started = 100.0
    assert tracker.healthy(now=100.0 + MAX_CYCLE_SECONDS - 1)
    assert not tracker.healthy(now=100.0 + MAX_CYCLE_SECONDS + 1)


def test_secrets_are_redacted_from_messages_and_tracebacks():
    register_secret("s3cr3t-refresh-value")
    record = logging.LogRecord(
        "x",
        logging.ERROR,
        __file__,
        1,
        "refreshing with %s failed; header Authorization: Bearer abc.def.ghi123",
        ("s3cr3t-refresh-value",),
        None,
    )
    try:
        raise RuntimeError("token endpoint said: access_token=zzzzzzzzzz&x=1")
    except RuntimeError:
        import sys

        record.exc_info = sys.exc_info()
    RedactingFilter().filter(record)
    text = record.getMessage() + (record.exc_text or "")
    assert "s3cr3t-refresh-value" not in text and "abc.def.ghi123" not in text
    assert "zzzzzzzzzz" not in text and text.count(MASK) >= 3
    line = json.loads(JsonFormatter().format(record))
    assert line["level"] == "error" and MASK in line["traceback"]
    assert (
        redact('{"refresh_token": "rrrrrrrr", "x": 1}')
        == '{"refresh_token": "' + MASK + '", "x": 1}'
    )


def test_status_reports_freshness_and_silent_sources(store, settings, ctx):
    import_file(store, "apple-health", SAMPLE / "apple_health_export.zip", ctx)
    now = datetime(2026, 11, 19, 12, 0, tzinfo=UTC)
    enabled = settings.model_copy(
        update={
            "sources": settings.sources.model_copy(
                update={
                    "ics": settings.sources.ics.model_copy(
                        update={"enabled": True, "interval_minutes": 30}
                    )
                }
            )
        }
    )
    record_outcome(store, SyncOutcome("ics", "ok"), now - timedelta(hours=5))
    record_outcome(store, SyncOutcome("ics", "error", error="HTTP 500"), now - timedelta(minutes=5))
    doc = collect_status(enabled, store, now=now)
    fresh = {f["input"]: f for f in doc["freshness"]}
    assert fresh["resting_hr"]["age_hours"] is not None and fresh["resting_hr"]["age_hours"] < 36
    assert fresh["stress"]["newest"] is None
    (warning,) = doc["warnings"]
    assert warning.startswith("ics: silent for 5.0 h") and "HTTP 500" in warning


@pytest.mark.sqlite_only
def test_backup_while_a_writer_is_busy_and_restore(store, settings, ctx, tmp_path):
    import_file(store, "apple-health", SAMPLE / "apple_health_export.zip", ctx)
    db = store.engine.url.database
    stop = threading.Event()

    def writer():
        conn = sqlite3.connect(db, timeout=30)
        i = 0
        while not stop.is_set():
            conn.execute("INSERT INTO meta (person, key, value) VALUES ('me', ?, 'x')", (f"k{i}",))
            conn.commit()
            i += 1
        conn.close()

    t = threading.Thread(target=writer)
    t.start()
    try:
        path = backup(store, tmp_path / "backups" / "bridge.db")
    finally:
        stop.set()
        t.join()
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    restored = Store(f"sqlite:///{path}")
    try:
        assert restored.count(Reading) == store.count(Reading) > 4000
    finally:
        restored.dispose()


@pytest.mark.sqlite_only
def test_backup_and_install_service_commands(tmp_path):
    from tests.helpers import write_config

    cfg = write_config(tmp_path / "c.toml", tmp_path / "data")
    runner = CliRunner()
    out = runner.invoke(app, ["--config", str(cfg), "backup", str(tmp_path / "b.db")])
    assert out.exit_code == 0 and "wrote" in out.output
    unit = runner.invoke(app, ["install-service", "--print", "--user", "bridge"]).output
    for line in (
        "Type=notify",
        "WatchdogSec=",
        "LoadCredential=keyring-key:",
        "User=bridge",
        "ProtectSystem=strict",
        "StateDirectory=rhythm-bridge",
        "NoNewPrivileges=true",
    ):
        assert line in unit
    assert "run\n" in unit.split("ExecStart=", 1)[1]
    target = tmp_path / "unit" / "rhythm-bridge.service"
    written = runner.invoke(app, ["install-service", "--path", str(target)])
    assert written.exit_code == 0 and target.read_text().startswith("# rhythm-bridge")


def test_the_freshness_table_names_every_physiological_input_of_the_weights():
    # Each weights input computed from a stored metric must show up in `status`.
    import tomllib
    from importlib.resources import files

    from bridge.out.status import METER_INPUTS

    weights = tomllib.loads(files("mappings").joinpath("meter_weights.toml").read_text())
    from_metric = {"hrv": ("hrv_sdnn", "hrv_rmssd"), "workouts": ("workout",)}
    for meter, inputs in weights.items():
        if not isinstance(inputs, dict) or meter == "targets":
            continue
        for name in inputs:
            for metric in from_metric.get(name, (name,)):
                if metric in (
                    "resting_hr",
                    "steps",
                    "stress",
                    "recovery",
                    "body_battery",
                    "hrv_sdnn",
                    "hrv_rmssd",
                    "workout",
                    "mindful",
                ):
                    assert meter in METER_INPUTS[metric], (meter, name)


def test_the_redactor_keeps_the_newest_secrets_and_a_bounded_list():
    # WHOOP rotates its tokens hourly: months of them must not make every log line slower.
    from bridge import logs

    register_secret("client-secret-used-every-hour")
    for n in range(3 * logs.MAX_SECRETS):
        register_secret(f"rotated-access-token-{n:05d}")
        if n % 50 == 0:
            register_secret("client-secret-used-every-hour")  # read again: stays
    newest = f"rotated-access-token-{3 * logs.MAX_SECRETS - 1:05d}"
    assert len(logs._secrets) == logs.MAX_SECRETS
    assert redact(f"{newest} client-secret-used-every-hour") == f"{MASK} {MASK}"
    assert redact("rotated-access-token-00000") == "rotated-access-token-00000"  # long dead
    register_secret("abc-abc-abc-abc-abc")
    register_secret("abc-abc")  # contained in the longer one: the longer is masked whole
    assert redact("abc-abc-abc-abc-abc") == MASK


def test_the_log_handler_follows_stderr_when_it_is_swapped_and_closed(monkeypatch):
    from bridge.logs import setup_logging

    root = logging.getLogger()
    before = list(root.handlers)
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    setup_logging()
    try:
        # What a CLI run under a test runner leaves behind: its captured stream, closed;
        # a server thread then logs. The line must reach the stderr of the moment.
        first.close()
        now = io.StringIO()
        monkeypatch.setattr(sys, "stderr", now)
        logging.getLogger("rhythm_bridge.web").warning("push from phone refused: bad JSON")
        assert "push from phone refused: bad JSON" in now.getvalue()
        assert "Logging error" not in now.getvalue()
    finally:
        for h in [h for h in root.handlers if h not in before]:
            root.removeHandler(h)
