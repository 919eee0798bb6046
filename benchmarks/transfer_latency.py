"""Recommend latency of the transfer runner (figures only, no thresholds).

    nice -n 19 .venv/bin/python benchmarks/transfer_latency.py

Histories come from a simulated person of the `fatigue` family (late and missing answers,
a calendar). Two ways of asking, as in benchmarks/runner_latency.py: a fresh runner per
call reads the whole history (the CLI, the daemon), and one runner asked once per slot with
one answer more each time (`eval`) reads only what is new.
"""

from __future__ import annotations

import time

import numpy as np

from bridge.runner import load_runner
from bridge.sim.episode import observation, run_episode
from bridge.sim.families import family


def main() -> None:
    person = family("fatigue").person("in", 0)
    ep = run_episode(load_runner("transfer"), person, 120)
    full = ep.history()
    obs = observation(120, np.array(ep.meters[-1]))
    for n in (0, 8, 28, 120):
        fresh = []
        for _ in range(100):
            start = time.perf_counter()
            load_runner("transfer").recommend(obs, full[:n])
            fresh.append(time.perf_counter() - start)
        t = np.array(fresh) * 1000
        print(
            f"transfer, fresh runner, {n:3d} answers: p50 {np.median(t):.2f} ms, "
            f"p99 {np.percentile(t, 99):.2f} ms"
        )
    runner, steps = load_runner("transfer"), []
    for n in range(len(full) + 1):
        start = time.perf_counter()
        runner.recommend(obs, full[:n])
        steps.append(time.perf_counter() - start)
    t = np.array(steps) * 1000
    print(
        f"transfer, one runner over {len(full)} answers: p50 {np.median(t):.2f} ms, "
        f"p99 {np.percentile(t, 99):.2f} ms"
    )


if __name__ == "__main__":
    main()
