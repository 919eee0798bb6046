"""A small run of benchmarks/many_people.py under `make test-postgres`: 20 people, two
workers, 100 seconds, one of them killed with SIGKILL mid-sync and restarted.

Checks what must hold at any load (no overlapping pulls of one account, no request past
a provider window, no row lost or doubled, everyone synced), never a timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import PG_ADMIN_URL, ROOT

pytestmark = pytest.mark.skipif(
    not PG_ADMIN_URL,
    reason="the load run needs PostgreSQL: it runs under `make test-postgres` "
    "(.ci/with-postgres sets RB_TEST_DATABASE_URL)",
)


def test_twenty_people_two_workers_one_killed() -> None:
    pytest.importorskip("procrastinate", reason="the workers extra is not installed")
    from tests.shared import shared_path

    shared_path("whoop", "whoop-openapi.json")  # the fake's record shapes
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "many_people.py"),
            *("--people", "20", "--workers", "2", "--seconds", "100", "--day-seconds", "120"),
            "--json",
        ],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["people"] == 20 and result["workers"] == 2
    assert result["killed_worker_pid"] is not None
    assert result["overlapping_syncs"] == 0
    assert result["refresh_token_reuse"] == 0
    assert result["window_violations"] == 0
    assert result["rows_lost"] == 0 and result["rows_duplicated"] == 0
    assert result["rows_expected"] > 0
    assert result["never_synced"] == 0
