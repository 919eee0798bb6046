"""`rhythm-bridge status` as a person reads it: their zone, human durations, columns that
line up, and "next cycle" only while a daemon runs."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bridge.errors import BridgeError
from bridge.intake.ingest import import_file
from bridge.out.status import collect_status, daemon_lock, daemon_running, status_lines
from bridge.store.models import Reading
from tests.conftest import SAMPLE

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
BERLIN = ZoneInfo("Europe/Berlin")


@pytest.fixture
def doc(store, settings, ctx):
    import_file(store, "apple-health", SAMPLE / "apple_health_export.zip", ctx)
    with store.transaction() as session:
        store.set_meta(session, "last_cycle_at", (NOW - timedelta(minutes=5)).isoformat())
    return lambda: collect_status(settings, store, now=NOW)


def test_times_are_local_with_how_long_ago_and_columns_line_up(doc):
    text = "\n".join(status_lines(doc(), NOW, BERLIN))
    assert "last cycle: 2026-11-24 12:55 (5 min ago)" in text  # 11:55 UTC is 12:55 in Berlin
    assert "+00:00" not in text and "Z " not in text
    assert not re.search(r"\d{2}:\d{2}:\d{2}\.\d+", text)  # no raw ISO instants
    fresh = text.split("data freshness:\n")[1].splitlines()
    # The sample's resting heart rate is from the 19th: five days, not "120.3 h ago".
    (rhr,) = [line for line in fresh if line.split()[0] == "resting_hr"]
    assert "(5 days ago)" in rhr
    (never,) = [line for line in fresh if line.split()[0] == "body_battery"]
    assert never.split()[:2] == ["body_battery", "never"]  # not "body_batterynever"
    starts = {line.index(line.split()[1]) for line in fresh}
    assert len(starts) == 1  # the second column starts at the same place on every line
    sources = text.split("sources:\n")[1].split("data freshness:")[0].splitlines()
    assert len({line.index(line.split()[1]) for line in sources if line.startswith("  ")}) == 1


def test_next_cycle_only_while_a_daemon_holds_the_lock(doc, settings):
    assert not daemon_running(settings.data_path)
    idle = status_lines(doc(), NOW, BERLIN)
    assert not any(line.startswith("next cycle") for line in idle)
    assert any(line.startswith("daemon: not running") for line in idle)
    with daemon_lock(settings.data_path):
        assert daemon_running(settings.data_path)
        running = doc()
        assert running["daemon_running"] is True
        lines = status_lines(running, NOW, BERLIN)
        assert "next cycle: 2026-11-24 13:10 (in 10 min)" in lines
        busy = pytest.raises(BridgeError, match="another rhythm-bridge daemon is running")
        with busy, daemon_lock(settings.data_path):
            pass
    assert not daemon_running(settings.data_path)
    assert doc()["next_cycle"] is None


def test_push_devices_get_their_own_aligned_rows(doc):
    status = doc()
    status["push_devices"] = [
        {
            "device": "iphone",
            "status": "ok",
            "last_push": (NOW - timedelta(hours=3)).isoformat(),
            "last_records": 1200,
            "records_total": 56000,
            "last_error": "HTTP 413",
            "last_error_at": (NOW - timedelta(days=2)).isoformat(),
        }
    ]
    lines = status_lines(status, NOW, BERLIN)
    at = lines.index("push devices:")
    assert lines[at + 1].split() == ["device", "state", "last", "push", "records"]
    assert lines[at + 2].split()[:4] == ["iphone", "ok", "2026-11-24", "10:00"]
    assert "(3 h ago)" in lines[at + 2] and "1,200 (56,000 in all)" in lines[at + 2]
    assert lines[at + 3].strip() == "last error (2026-11-22 13:00 (2 days ago)): HTTP 413"


def test_imported_files_count_as_the_sources_last_success_and_fit_has_its_own_row(
    store, settings, ctx
):
    from tests.shared import shared_path

    # Nothing enabled (the starter config): the person imports files by hand.
    settings.sources.apple_health.enabled = False
    import_file(store, "apple-health", SAMPLE / "apple_health_export.zip", ctx)
    import_file(store, "fit", shared_path("garmin", "fit", "garmin-fenix-5-run.fit"), ctx)
    doc = collect_status(settings, store, now=NOW)
    rows = {s["source"]: s for s in doc["sources"]}
    apple = rows["apple_health"]
    assert apple["status"] == "imported" and apple["last_success"] and apple["last_import"]
    assert rows["fit"]["records"] == 25 and rows["fit"]["last_success"]
    assert sum(s["records"] for s in doc["sources"]) == store.count(Reading)
    text = status_lines(doc, NOW, BERLIN)
    (apple_line,) = [line for line in text if line.startswith("  apple_health")]
    assert "imported" in apple_line and "disabled" not in apple_line and "—" not in apple_line
    (fit_line,) = [line for line in text if line.startswith("  fit ")]
    assert "imported" in fit_line and " 25 " in fit_line
    # A source never used stays as it was.
    (whoop_line,) = [line for line in text if line.startswith("  whoop")]
    assert "disabled" in whoop_line
