"""A live source that needs (re-)auth never stops a cycle or the other sources."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import respx

from bridge.config import Settings
from bridge.cycle.run import run_cycle
from bridge.intake.sources import get_state
from bridge.store import Store
from tests.conftest import DEMO_NOW, SAMPLE


def test_reauth_required_source_is_skipped_while_the_others_run(tmp_path: Path) -> None:
    settings = Settings.model_validate(
        {
            "timezone": "Europe/Berlin",
            "data_dir": str(tmp_path / "data"),
            "sources": {
                "ics": {"enabled": True, "paths": [str(SAMPLE / "calendar.ics")]},
                "whoop": {"enabled": True, "client_id": "id"},  # never authorized
            },
        }
    )
    store = Store(settings.database_url)
    try:
        with respx.mock(assert_all_called=False):  # any network call would fail the test
            first = run_cycle(settings, store, DEMO_NOW)
            outcomes = {o.source: o for o in first.synced}
            assert outcomes["ics"].status == "ok" and outcomes["ics"].records > 0
            # Never connected: nothing expired, so it says how to connect, not "re-auth".
            assert outcomes["whoop"].status == "not_connected"
            assert (
                outcomes["whoop"].line() == "whoop: not connected: run `rhythm-bridge auth whoop`"
            )
            assert first.recommendation is not None
            later = run_cycle(settings, store, DEMO_NOW + timedelta(hours=2))
        assert {o.source for o in later.synced} == {"ics"}  # whoop waits for the person
        state = get_state(store, "whoop")
        assert state is not None and state.status == "not_connected" and state.last_error is None
    finally:
        store.dispose()
