"""Loose ends a new user met: escape sequences on the terminal, two spellings of one command."""

from __future__ import annotations

import logging

import pytest
from typer.testing import CliRunner

from bridge.cli.main import app
from bridge.errors import AuthExpired, InputError, printable
from bridge.logs import RedactingFilter
from connectors.registry import WITH_AUTH, auth_command
from tests.helpers import write_config

ESC = "\x1b]0;pwned\x07\x1b[2J\x1b[31m"
HOSTILE_ICS = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\n"
    f"X-BAD{ESC}\r\n"  # a malformed line: icalendar quotes it in its error
    "BEGIN:VEVENT\r\nUID:a\r\nDTSTART:20261118T080000Z\r\nDTEND:20261118T090000Z\r\n"
    "SUMMARY:Gym\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)


def test_printable_strips_c0_c1_and_bidi_but_keeps_letters():
    assert printable(f"a{ESC}b\u009b2J\u202ec\nd") == "a]0;pwned[2J[31mb2Jc d"
    assert printable("Sören ✓ 日本 Gym") == "Sören ✓ 日本 Gym"
    assert str(InputError(f"x.ics: bad line {ESC}")).isprintable()


def test_a_log_line_never_carries_an_escape_sequence():
    record = logging.LogRecord("t", logging.WARNING, __file__, 1, "title %s", (ESC,), None)
    RedactingFilter().filter(record)
    assert "\x1b" not in record.getMessage() and "\x07" not in record.getMessage()


@pytest.mark.usefixtures("cli_state")
def test_an_escape_sequence_in_a_calendar_reaches_no_terminal_and_no_stored_error(tmp_path):
    cal = tmp_path / "cal.ics"
    cal.write_text(HOSTILE_ICS, newline="")
    cfg = write_config(
        tmp_path / "c.toml",
        tmp_path / "data",
        ics=f'[sources.ics]\nenabled = true\npaths = ["{cal}"]',
    )
    cli = CliRunner()
    imported = cli.invoke(app, ["--config", str(cfg), "import", "ics", str(cal)])
    assert imported.exit_code == 2
    assert imported.output.count("\n") == 1 and str(cal) in imported.output
    assert "malformed" in imported.output
    synced = cli.invoke(app, ["--config", str(cfg), "sync", "ics"])
    status = cli.invoke(app, ["--config", str(cfg), "status"])
    assert "last error" in status.output and "malformed" in status.output
    for output in (imported.output, synced.output, status.output):
        assert "\x1b" not in output and "\x07" not in output, repr(output)


@pytest.mark.parametrize("source", sorted(WITH_AUTH))
def test_every_message_names_the_auth_command_that_exists(source):
    command = auth_command(source)
    assert f"`{command}`" in str(AuthExpired(source, "token revoked", command=command))
    args = command.removeprefix("rhythm-bridge auth ").split()  # "google --tasks" too
    result = CliRunner().invoke(app, ["auth", *args, "--help"])
    assert result.exit_code == 0, result.output
    assert auth_command("google_calendar") == "rhythm-bridge auth google"


def test_a_cycle_classifies_with_numpy_alone():
    """SciPy and scikit-learn cost ~140 MB of a Pi's memory: only training imports them."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from bridge.cycle.classify import build_classifier\n"
        "from bridge.config import Settings\n"
        "c = build_classifier(Settings(), None)\n"
        "print([a for a, _ in c.model.predict(['Team standup', 'Gym session', 'Zorblax'])])\n"
        "print(sorted(m for m in ('scipy', 'sklearn') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    actions, loaded = out.stdout.strip().splitlines()
    assert "EXERCISE" in actions
    assert loaded == "[]", out.stdout
