"""The daemon's resident memory when idle after a cycle, and what each heavy import costs.

    python benchmarks/idle_rss.py [--settle 5]

Measured in this run, each in its own process:

  imports   peak RSS and time of `import X` for each heavy dependency, against a bare
            interpreter (the baseline of this run) and against numpy where X needs it
  daemon    `rhythm-bridge run` on a small store (the bundled Apple Health sample and
            calendar): after its first cycle wrote latest.json and `--settle` seconds
            passed, VmRSS (idle) and VmHWM (peak) from /proc, and which of the heavy
            libraries the process has loaded (from its memory map); and the peak of the
            child process that runs the meter step (bridge/cycle/meters_apart.py),
            sampled every 0.1 s

The target is an idle RSS of at most 100 MB on a Raspberry-Pi-class box.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
HEAVY = [
    "numpy",
    "pandas",
    "scipy.sparse",
    "sklearn",
    "sqlalchemy",
    "pydantic",
    "httpx",
    "icalendar",
    "recurring_ical_events",
    "apscheduler",
    "starlette",
    "uvicorn",
    "fitdecode",
    "alembic.command",
    "bridge.cycle.meters",
    "bridge.cycle.run",
    "bridge.daemon.scheduler",
]
NUMPY_BASED = {"pandas", "scipy.sparse", "sklearn", "bridge.cycle.meters", "bridge.cycle.run"}
NUMPY_BASED |= {"bridge.daemon.scheduler"}
PROBE = (
    "import importlib, resource, sys, time\n"
    "t = time.perf_counter()\n"
    "for m in sys.argv[1:]: importlib.import_module(m)\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, time.perf_counter() - t)"
)


def import_cost(*modules: str) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *modules], capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[0]), float(out[1])


def proc_status(pid: int) -> dict[str, float]:
    fields = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) / 1024
    return fields


def children_peak(pid: int) -> float:
    """The highest VmHWM (MB) among the process's children now (0 when it has none)."""
    peak = 0.0
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            with contextlib.suppress(OSError):  # it ended meanwhile
                peak = max(peak, proc_status(int(child)).get("VmHWM", 0.0))
    return peak


def loaded_libraries(pid: int) -> list[str]:
    with open(f"/proc/{pid}/maps") as fh:
        names = set(re.findall(r"site-packages/([A-Za-z_]+)", fh.read()))
    return sorted(n for n in names if n.lower() in {"numpy", "pandas", "scipy", "sklearn"})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument(
        "--web-port", type=int, help="also serve the web page on this port (and fetch it once)"
    )
    args = parser.parse_args()

    bare, _ = import_cost()
    with_numpy, _ = import_cost("numpy")
    print(f"bare interpreter: {bare:.0f} MB")
    print(
        f"{'import':26} {'peak RSS MB':>11} {'+ over bare':>11} {'+ over numpy':>12} {'seconds':>8}"
    )
    for module in HEAVY:
        rss, seconds = import_cost(module)
        numpy_based = module in NUMPY_BASED
        over_numpy = f"{rss - with_numpy:+12.0f}" if numpy_based else f"{'':>12}"
        print(f"{module:26} {rss:11.0f} {rss - bare:+11.0f} {over_numpy} {seconds:8.2f}")

    work = Path(tempfile.mkdtemp(prefix="rb-idle-"))
    try:
        data = work / "data"
        config = work / "c.toml"
        calendar = ROOT / "bridge" / "sample_data" / "calendar.ics"
        config.write_text(
            f'timezone = "Europe/Berlin"\ndata_dir = "{data}"\n'
            f'[sources.ics]\nenabled = true\npaths = ["{calendar}"]\n'
            + (f"[web]\nenabled = true\nport = {args.web_port}\n" if args.web_port else "")
        )
        env = {**os.environ, "RHYTHM_BRIDGE_CONFIG": str(config)}
        subprocess.run(
            [
                str(BIN / "rhythm-bridge"),
                "import",
                "apple-health",
                str(ROOT / "bridge" / "sample_data" / "apple_health_export.zip"),
            ],
            env=env,
            check=True,
            capture_output=True,
        )
        daemon = subprocess.Popen(
            [str(BIN / "rhythm-bridge"), "run"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            started, child_peak = time.monotonic(), 0.0
            while not (data / "latest.json").exists():
                if daemon.poll() is not None or time.monotonic() - started > 300:
                    raise SystemExit("the daemon wrote no snapshot")
                child_peak = max(child_peak, children_peak(daemon.pid))
                time.sleep(0.1)
            cycle = time.monotonic() - started
            if args.web_port:
                import urllib.request

                with urllib.request.urlopen(f"http://127.0.0.1:{args.web_port}/", timeout=60):
                    pass
            time.sleep(args.settle)
            status = proc_status(daemon.pid)
            libraries = loaded_libraries(daemon.pid)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(120)
        what = "daemon with the web page" if args.web_port else "daemon"
        print(
            f"{what}: first cycle done after {cycle:.1f} s (process start included); idle "
            f"{args.settle:.0f} s later: RSS {status['VmRSS']:.0f} MB, peak {status['VmHWM']:.0f} "
            f"MB; {status['VmRSS'] / bare:.1f}x a bare interpreter; heavy libraries loaded: "
            f"{', '.join(libraries) or 'none'}"
        )
        print(f"the meter step's child process: peak RSS {child_peak:.0f} MB (sampled)")
        print(f"target: idle RSS <= 100 MB: {'met' if status['VmRSS'] <= 100 else 'MISSED'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
