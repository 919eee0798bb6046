"""A worker for the worker tests, in this process or as a child (`python -m`), whose WHOOP
pull is scripted: it sleeps, notes when it ran, and returns readings, a revoked token or a
429, as `RB_FAKE_PULL` (JSON) says. Everything after the pull (the store writes, the sync
state, the job queue, the locks) is the real thing.

    python -m tests.daemon.worker_child SETTINGS_JSON [CONCURRENCY]
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bridge.config import Settings
from bridge.errors import AuthExpired, RateLimited
from connectors.base import ReadingRecord
from connectors.live import PullResult

READINGS = 12
T0 = datetime(2026, 11, 1, 6, 0, tzinfo=UTC)


def expected_readings() -> list[ReadingRecord]:
    return [
        ReadingRecord("resting_hr", T0 + timedelta(days=i), T0 + timedelta(days=i), 50.0 + i, "bpm")
        for i in range(READINGS)
    ]


def fake_pull(settings: Settings, secrets: Any, ctx: Any, cursors: Any, **_: Any) -> PullResult:
    plan = json.loads(os.environ.get("RB_FAKE_PULL", "{}"))
    person = settings.person
    log = plan.get("log")
    started = time.time()
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"person": person, "pid": os.getpid(), "start": started}) + "\n")
    time.sleep(float(plan.get("sleep", 0)))
    if person in plan.get("revoked", []):
        raise AuthExpired("whoop", "token endpoint said 400 invalid_grant", command="auth whoop")
    limited = plan.get("rate_limit_once", {}).get(person)
    if limited:
        mark = Path(plan["marks"]) / f"{person}.limited"
        if not mark.exists():
            mark.touch()
            raise RateLimited("whoop /v2/cycle: rate limited", retry_after=float(limited))
    result = PullResult(records=list(expected_readings()))
    result.cursors[("cycle", "")] = "2026-11-12T06:00:00Z"
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"person": person, "pid": os.getpid(), "end": time.time()}) + "\n")
    return result


def install() -> None:
    import connectors.whoop

    connectors.whoop.pull = fake_pull  # type: ignore[assignment]


def main() -> None:
    from bridge.daemon.workers import run_worker
    from bridge.store import Store

    settings = Settings.model_validate(json.loads(sys.argv[1]))
    concurrency = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    install()
    store = Store(settings.database_url)
    run_worker(settings, store, concurrency=concurrency)


if __name__ == "__main__":
    main()
