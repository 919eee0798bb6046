"""The daemon stays small between cycles: its meter step (pandas) runs in a child process,
and an up-to-date store opens without alembic (benchmarks/idle_rss.py measures the RSS)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading

import pytest

import bridge.cycle.meters_apart as meters_apart
from bridge.cycle.meter_changes import STATE_KEY
from bridge.cycle.meters import recompute_meters
from bridge.cycle.meters_apart import recompute_apart
from bridge.errors import BridgeError, Cancelled, ConfigError
from bridge.store.models import MeterSnapshot
from tests.conftest import DEMO_NOW, SAMPLE
from tests.cycle.test_meter_recompute import load_sample, snapshots
from tests.helpers import write_config

# What a daemon must not keep for its whole life: pandas (the meter frames), alembic and
# its templates (migrations), scikit-learn and SciPy (training only).
HEAVY = ("pandas", "alembic", "mako", "sklearn", "scipy")

ONE_DAEMON_CYCLE = """
import json, sys
from pathlib import Path
from bridge.config import load_settings
from bridge.store import Store
from bridge.daemon.scheduler import CycleTracker

settings = load_settings(Path(sys.argv[1]))
store = Store(settings.database_url)
CycleTracker().run(settings, store)
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
# What `run` serves with [web] on: the page and `status` word ages, not with pandas.
import bridge.web.server, bridge.web.app, bridge.web.views, bridge.out.status
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def _config(tmp_path, settings, meters=""):
    database = f'[database]\nurl = "{settings.database.url}"' if settings.database.url else ""
    return write_config(
        tmp_path / "c.toml",
        settings.data_path,
        database=database,
        ics=f'[sources.ics]\nenabled = true\npaths = ["{SAMPLE / "calendar.ics"}"]',
        meters=meters,
    )


def _one_daemon_cycle(cfg):
    out = subprocess.run(
        [sys.executable, "-c", ONE_DAEMON_CYCLE, str(cfg)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert "cycle crashed" not in out.stderr and "cycle failed" not in out.stderr, out.stderr
    cycle, web = (set(json.loads(line)) for line in out.stdout.splitlines()[-2:])
    return cycle, web


def test_a_daemon_cycle_computes_meters_without_importing_pandas_or_alembic(
    loaded, settings, tmp_path
):
    cycle, web = _one_daemon_cycle(_config(tmp_path, settings))
    assert "bridge" in cycle and "numpy" in cycle  # the probe saw the cycle's imports
    assert cycle.isdisjoint(HEAVY), sorted(cycle & set(HEAVY))
    assert "starlette" in web and web.isdisjoint(HEAVY), sorted(web & set(HEAVY))
    # The cycle did its work: meters for every slot with data, and the snapshot.
    assert loaded.count(MeterSnapshot) > 33 * 4
    assert (settings.data_path / "latest.json").exists()


def test_the_meter_step_apart_stores_what_the_step_in_process_stores(loaded, settings):
    done = recompute_apart(loaded, settings, DEMO_NOW)
    assert done == loaded.count(MeterSnapshot) == 33 * 4 + 1
    apart = snapshots(loaded)
    assert recompute_meters(loaded, settings, DEMO_NOW, full=True) == done
    assert snapshots(loaded) == apart


def _children(monkeypatch, then):
    """Record the meter step's child and do `then(child)` as soon as it started."""
    started: list[subprocess.Popen] = []
    real = subprocess.Popen

    def popen(*args, **kwargs):
        child = real(*args, **kwargs)
        started.append(child)
        then(child)
        return child

    monkeypatch.setattr(meters_apart.subprocess, "Popen", popen)
    return started


def test_a_stop_during_the_meter_step_ends_the_child_and_stores_nothing(
    loaded, settings, monkeypatch
):
    stop = threading.Event()
    started = _children(monkeypatch, lambda child: stop.set())
    with pytest.raises(Cancelled):
        recompute_apart(loaded, settings, DEMO_NOW, stop=stop)
    assert started[0].returncode == -signal.SIGTERM
    assert loaded.count(MeterSnapshot) == 0
    assert loaded.get_meta(STATE_KEY) is None
    # The next cycle computes everything.
    monkeypatch.undo()
    assert recompute_apart(loaded, settings, DEMO_NOW) == 33 * 4 + 1


def test_systemds_stop_reaching_the_child_first_is_still_a_stop(loaded, settings, monkeypatch):
    # The unit's stop signal goes to the whole group: here the child ends before the
    # daemon's handler has set the flag.
    stop = threading.Event()

    def sigterm(child):
        child.send_signal(signal.SIGTERM)
        threading.Timer(0.5, stop.set).start()

    started = _children(monkeypatch, sigterm)
    with pytest.raises(Cancelled):
        recompute_apart(loaded, settings, DEMO_NOW, stop=stop)
    assert started[0].returncode == -signal.SIGTERM
    assert loaded.count(MeterSnapshot) == 0


def test_a_child_killed_from_outside_is_one_line_and_leaves_nothing_partial(
    loaded, settings, monkeypatch
):
    started = _children(monkeypatch, lambda child: child.send_signal(signal.SIGKILL))
    with pytest.raises(BridgeError, match=r"ended by SIGKILL \(out of memory\?\); nothing"):
        recompute_apart(loaded, settings, DEMO_NOW, stop=threading.Event())
    assert started[0].returncode == -signal.SIGKILL
    assert loaded.count(MeterSnapshot) == 0


def test_the_childs_errors_arrive_as_the_same_one_line_errors(loaded, settings, tmp_path):
    bad = tmp_path / "weights.toml"
    bad.write_text("[vitality\n")
    broken = settings.model_copy(
        update={"meters": settings.meters.model_copy(update={"weights_file": str(bad)})}
    )
    with pytest.raises(ConfigError, match=r"config key 'meters\.weights_file'") as apart:
        recompute_apart(loaded, broken, DEMO_NOW)
    with pytest.raises(ConfigError) as in_process:
        recompute_meters(loaded, broken, DEMO_NOW)
    assert str(apart.value) == str(in_process.value)
    assert loaded.count(MeterSnapshot) == 0


def test_meters_in_process_keeps_the_step_in_the_daemon(loaded, settings, tmp_path):
    # The person's choice of faster cycles over a smaller daemon reaches the scheduler.
    cfg = _config(tmp_path, settings, meters="[meters]\nin_process = true")
    cycle, _ = _one_daemon_cycle(cfg)
    assert "pandas" in cycle
    assert loaded.count(MeterSnapshot) > 33 * 4
    assert (settings.data_path / "latest.json").exists()


def test_the_child_starts_with_the_cycle_and_a_cycle_stopped_before_the_step_ends_it(
    loaded, settings, monkeypatch
):
    import bridge.cycle.run as run

    steps: list[str] = []
    stop = threading.Event()

    def classify(*args):
        steps.append("classify")
        stop.set()  # the daemon is told to stop while a step before the meters runs
        return real(*args)

    started = _children(monkeypatch, lambda child: steps.append("child"))
    real = run.classify_events
    monkeypatch.setattr(run, "classify_events", classify)
    with pytest.raises(Cancelled):
        run.run_cycle(settings, loaded, DEMO_NOW, stop=stop, meters_apart=True)
    # Started first, so that its imports overlap the syncs; ended with the cycle.
    assert steps == ["child", "classify"]
    assert started[0].returncode == -signal.SIGKILL
    assert loaded.count(MeterSnapshot) == 0


def test_a_child_whose_cycle_ended_exits_by_itself_on_end_of_input():
    with meters_apart.MeterChild() as child:
        assert child.process.stdin is not None
        child.process.stdin.close()
        assert child.process.wait(120) == 0


@pytest.fixture
def loaded(store, ctx):
    return load_sample(store, ctx)
