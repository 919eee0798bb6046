import json
import os
import stat

import pytest
from typer.testing import CliRunner

from bridge.cli.main import app
from mappings.actions import ACTIONS
from tests.conftest import SAMPLE
from tests.helpers import validate_snapshot, write_config


@pytest.fixture
def cli():
    return CliRunner()


@pytest.fixture
def cfg(tmp_path):
    return write_config(tmp_path / "config.toml", tmp_path / "data")


def invoke(cli, *args, input=None):
    return cli.invoke(app, [str(a) for a in args], input=input)


def test_help_lists_every_command(cli):
    result = invoke(cli, "--help")
    assert result.exit_code == 0
    for name in (
        "init",
        "demo",
        "run",
        "import",
        "sync",
        "meters",
        "classify",
        "recommend",
        "feedback",
        "export",
        "status",
    ):
        assert name in result.output


def test_demo_json_validates_against_the_schema(cli, tmp_path):
    result = invoke(cli, "demo", "--json", "--data-dir", tmp_path / "demo")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    validate_snapshot(doc)
    assert doc["recommendation"]["action"] in ACTIONS
    for m in ("vitality", "cognition", "progress", "serenity", "connection"):
        value = doc["current"][m]
        assert (value is None and doc["current"]["provenance"][m]["reason"]) or 0 <= value <= 1


def test_demo_text(cli, tmp_path):
    result = invoke(cli, "demo", "--data-dir", tmp_path / "demo")
    assert result.exit_code == 0, result.output
    assert "meters for 2026-11-19 morning" in result.output
    assert "Gym - 7am" in result.output and "-> EXERCISE" in result.output
    assert "recommendation #1" in result.output


def test_init_writes_a_private_config_and_refuses_to_overwrite(cli, tmp_path):
    path = tmp_path / "c" / "config.toml"
    assert invoke(cli, "--config", path, "init").exit_code == 0
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = invoke(cli, "--config", path, "init")
    assert again.exit_code == 2 and "--force" in again.output
    assert invoke(cli, "--config", path, "init", "--force").exit_code == 0


def test_a_bad_config_is_one_line_and_exit_2(cli, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[schedule]\ncycle_minutes = "often"\n')
    result = invoke(cli, "--config", path, "status")
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0
    assert "key 'schedule.cycle_minutes'" in result.output


def test_import_status_export_and_run_once(cli, cfg, tmp_path):
    first = invoke(
        cli, "--config", cfg, "import", "apple-health", SAMPLE / "apple_health_export.zip"
    )
    assert first.exit_code == 0 and "4219 new" in first.output
    again = invoke(
        cli, "--config", cfg, "import", "apple-health", SAMPLE / "apple_health_export.zip"
    )
    assert "already imported" in again.output
    assert invoke(cli, "--config", cfg, "import", "ics", SAMPLE / "calendar.ics").exit_code == 0
    run = invoke(cli, "--config", cfg, "run", "--once")
    assert run.exit_code == 0 and "cycle done" in run.output
    status = json.loads(invoke(cli, "--config", cfg, "status", "--json").output)
    expected = os.environ.get("RHYTHM_BRIDGE_DATABASE__URL") or str(
        tmp_path / "data" / "rhythm-bridge.db"
    )
    assert status["database"].split("@")[-1].endswith(expected.split("@")[-1])
    assert status["last_cycle"]
    apple = next(s for s in status["sources"] if s["source"] == "apple_health")
    assert apple["records"] == 4219
    out = tmp_path / "snap.json"
    result = invoke(cli, "--config", cfg, "export", "--out", out, "--since", "2026-10-01")
    assert result.exit_code == 0
    validate_snapshot(json.loads(out.read_text()))
    text_status = invoke(cli, "--config", cfg, "status").output
    assert "apple_health" in text_status and "disabled" in text_status


def test_import_errors(cli, cfg, tmp_path):
    bogus = tmp_path / "export.zip"
    bogus.write_text("nope")
    result = invoke(cli, "--config", cfg, "import", "apple-health", bogus)
    assert result.exit_code == 2 and "not a zip file" in result.output
    assert "unknown import kind" in invoke(cli, "--config", cfg, "import", "polar", bogus).output


def test_sync_runs_enabled_sources_and_reports_failures(cli, tmp_path):
    watch = tmp_path / "watch"
    watch.mkdir()
    (watch / "export.zip").write_bytes((SAMPLE / "apple_health_export.zip").read_bytes())
    cfg = write_config(
        tmp_path / "c.toml",
        tmp_path / "data",
        apple=f'[sources.apple_health]\nenabled = true\nwatch_dir = "{watch}"',
        ics='[sources.ics]\nenabled = true\npaths = ["/nonexistent/cal.ics"]',
    )
    result = invoke(cli, "--config", cfg, "sync")
    assert "apple_health: ok, 4219 records, 4219 new" in result.output
    assert "ics: error" in result.output and "no such file" in result.output
    assert result.exit_code == 1
    again = invoke(cli, "--config", cfg, "sync", "apple_health")
    assert "apple_health: ok, 0 records, 0 new" in again.output and again.exit_code == 0


def test_classify_single_and_batch(cli, cfg):
    one = invoke(cli, "--config", cfg, "classify", "Gym block", "--json")
    assert json.loads(one.output) == {
        "title": "Gym block",
        "action": "EXERCISE",
        "confidence": 0.9,
        "layer": "rules",
    }
    batch = invoke(cli, "--config", cfg, "classify", input="Team standup\nZorblax\nJournaling\n")
    lines = [json.loads(x) for x in batch.output.splitlines()]
    assert [x["title"] for x in lines] == ["Team standup", "Zorblax", "Journaling"]
    assert [x["action"] for x in lines] == ["ADMIN_WORK", "UNCLASSIFIED", "MEDITATE"]


def test_recommend_feedback_and_meters(cli, cfg):
    invoke(cli, "--config", cfg, "import", "apple-health", SAMPLE / "apple_health_export.zip")
    invoke(cli, "--config", cfg, "run", "--once")
    rec = json.loads(invoke(cli, "--config", cfg, "recommend", "--json").output)
    first = invoke(cli, "--config", cfg, "feedback", rec["id"], "accept")
    assert first.exit_code == 0 and "accepted" in first.output
    assert rec["response"] is None
    # The same slot's recommendation now shows the answer, as the page and snapshot do.
    again = json.loads(invoke(cli, "--config", cfg, "recommend", "--json").output)
    assert again["id"] == rec["id"] and again["response"] == "accepted"
    second = invoke(cli, "--config", cfg, "feedback", rec["id"], "ignore")
    assert "already answered" in second.output
    missing = invoke(cli, "--config", cfg, "feedback", 999, "accept")
    assert missing.exit_code == 2 and "no recommendation with id 999" in missing.output
    text = invoke(cli, "--config", cfg, "recommend").output
    assert "answered: accepted (cli)" in text and "no answers yet" not in text
    bad = invoke(cli, "--config", cfg, "feedback", rec["id"], "love")
    assert bad.exit_code == 2
    meters = json.loads(invoke(cli, "--config", cfg, "meters", "--json").output)
    assert meters and all(0 <= row["slot"] <= 3 for row in meters)
    assert invoke(cli, "--config", cfg, "meters", "--date", "yesterday").exit_code == 2


def test_recommend_shows_the_rescheduled_window(cli, cfg):
    """Issue 41 item 5: after `feedback N reschedule`, plain `recommend` names the answer and
    the proposed window (it used to print the same line as before)."""
    invoke(cli, "--config", cfg, "import", "apple-health", SAMPLE / "apple_health_export.zip")
    invoke(cli, "--config", cfg, "run", "--once")
    rec = json.loads(invoke(cli, "--config", cfg, "recommend", "--json").output)
    assert "no answers yet" in invoke(cli, "--config", cfg, "recommend").output
    moved = invoke(cli, "--config", cfg, "feedback", rec["id"], "reschedule").output
    text = invoke(cli, "--config", cfg, "recommend").output
    assert "answered: rescheduled (cli)" in text
    as_json = json.loads(invoke(cli, "--config", cfg, "recommend", "--json").output)
    if "next free window: #" in moved:
        proposal = moved.split("next free window: ")[1].split()[0]
        assert f"rescheduled to: {proposal} " in text
        assert f"#{as_json['rescheduled_to']['id']}" == proposal
    else:
        assert "rescheduled to: no free window" in text and as_json["rescheduled_to"] is None


@pytest.mark.sqlite_only
def test_worker_on_sqlite_says_it_needs_postgresql(cli, cfg):
    result = invoke(cli, "--config", cfg, "worker")
    assert result.exit_code == 2  # a configuration error
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "needs [database] url on PostgreSQL" in lines[0], result.output
    assert "Traceback" not in result.output
