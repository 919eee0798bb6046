"""`rhythm-bridge import KIND PATH_OR_URL` for every file source, and its progress."""

import io
import sys

import httpx
import pytest
import respx
from typer.testing import CliRunner

from bridge.cli.main import app
from bridge.cli.progress import records_progress
from bridge.intake.ingest import import_file
from tests.conftest import SAMPLE
from tests.helpers import write_config
from tests.shared import shared_path

pytestmark = pytest.mark.usefixtures("cli_state")


def _run(tmp_path, *args):
    cfg = write_config(tmp_path / "c.toml", tmp_path / "data")
    return CliRunner().invoke(app, ["--config", str(cfg), "import", *map(str, args)])


def test_import_fit_file(tmp_path):
    result = _run(tmp_path, "fit", shared_path("garmin", "fit", "MonitoringFile.fit"))
    assert result.exit_code == 0, result.output
    assert "79 records (steps 79); 79 new, 0 already known" in result.output


@respx.mock
def test_import_ics_url(tmp_path):
    url = "https://example.org/private/feed.ics"
    respx.get(url).mock(
        return_value=httpx.Response(200, content=(SAMPLE / "calendar.ics").read_bytes())
    )
    result = _run(tmp_path, "ics", url)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("https://example.org/…: ") and " new" in result.output


def test_progress_reports_running_counts(store, ctx):
    seen = []
    summary = import_file(
        store, "apple-health", SAMPLE / "apple_health_export.zip", ctx, progress=seen.append
    )
    assert seen == sorted(seen) and seen[-1] == summary.records and len(seen) >= 1


def test_the_bar_only_appears_on_a_terminal(monkeypatch):
    with records_progress("x") as progress:
        assert progress is None  # pytest's stdout is not a terminal

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdout", Tty())
    with records_progress("importing") as progress:
        assert progress is not None
        progress(5000)


def test_import_apple_health_accepts_the_unzipped_export_folder(tmp_path):
    import zipfile

    # Apple's ZIP unzips to apple_health_export/export.xml; either folder is accepted.
    with zipfile.ZipFile(SAMPLE / "apple_health_export.zip") as zf:
        zf.extractall(tmp_path / "unzipped")
    result = _run(tmp_path, "apple-health", tmp_path / "unzipped")
    assert result.exit_code == 0, result.output
    assert "no such file" not in result.output and " new" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _run(tmp_path, "apple-health", empty)
    assert result.exit_code == 2
    assert "a folder without export.xml" in result.output


@respx.mock
def test_import_ics_url_that_cannot_connect_says_what_to_do(tmp_path):
    url = "https://example.org/private/feed.ics"
    respx.get(url).mock(side_effect=httpx.ConnectError("refused"))
    result = _run(tmp_path, "ics", url)
    assert result.exit_code == 2
    assert "will retry" not in result.output  # a one-shot import retries nothing
    assert "nothing was imported" in result.output and "run the command again" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
