import os
import signal
import subprocess
import sys
import time

from bridge.daemon import build_scheduler
from tests.conftest import SAMPLE
from tests.helpers import validate_snapshot, write_config


def test_the_cycle_job_coalesces_and_never_overlaps(settings, store):
    scheduler = build_scheduler(settings, store)
    job = scheduler.get_job("cycle")
    assert job.coalesce is True and job.max_instances == 1
    assert job.trigger.interval.total_seconds() == settings.schedule.cycle_minutes * 60
    assert {j.id for j in scheduler.get_jobs()} == {"cycle", "adapter"}


def test_the_adapter_job_is_off_when_configured_so(settings, store):
    off = settings.model_copy(
        update={"runner": settings.runner.model_copy(update={"adapter_refit_days": 0})}
    )
    assert [j.id for j in build_scheduler(off, store).get_jobs()] == ["cycle"]


def test_the_daemon_runs_a_cycle_and_stops_cleanly_on_sigterm(tmp_path):
    import json

    cfg = write_config(
        tmp_path / "c.toml",
        tmp_path / "data",
        ics=f'[sources.ics]\nenabled = true\npaths = ["{SAMPLE / "calendar.ics"}"]',
    )
    snapshot = tmp_path / "data" / "latest.json"
    env = {**os.environ, "RHYTHM_BRIDGE_CONFIG": str(cfg)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bridge.cli", "run"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not snapshot.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert snapshot.exists(), "no snapshot after the first cycle"
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, output
    assert "stopping after the current cycle" in output and "daemon stopped" in output
    validate_snapshot(json.loads(snapshot.read_text()))
