"""Recommend latency of the bundled runner vs the heuristic, measured in the same run.

    .venv/bin/python benchmarks/runner_latency.py

Histories come from a simulated person, so they have the real shape and length (the
pipeline passes at most 30 days = 120 answers). Two ways of asking: a fresh runner per
call reads the whole history (as the CLI does), and one runner asked once per slot with
one answer more each time (as `eval` and a long-running daemon do) reads only the new
answer (bridge.runner.bundled.Evidence). Last, the fresh-runner case with the per-person
correction (a trial: bridge.sim.trials, bridge.sim.residual) off and on, alternating call by
call.
"""

from __future__ import annotations

import time

import numpy as np

from bridge.runner import load_runner
from bridge.runner.bundled import BundledRunner
from bridge.sim.episode import observation, run_episode
from bridge.sim.population import people
from bridge.sim.trials import TrialRunner


def timed(runner, obs, history, repeat: int = 200) -> np.ndarray:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        runner.recommend(obs, history)
        out.append(time.perf_counter() - start)
    return np.array(out) * 1000


def main() -> None:
    person = people("in", 1)[0]
    ep = run_episode(load_runner("bundled"), person, 120)
    full = ep.history()
    obs = observation(120, np.array(ep.meters[-1]))
    heuristic, bundled = load_runner("heuristic"), load_runner("bundled")
    base = timed(heuristic, obs, full)
    print(f"heuristic: p50 {np.median(base):.3f} ms")
    for n in (0, 8, 28, 120):
        t = timed(bundled, obs, full[:n])
        p50 = np.median(t)
        print(
            f"bundled, {n:3d} answers: p50 {p50:.2f} ms, p99 {np.percentile(t, 99):.2f} ms, "
            f"{1000 / p50:.0f} recommendations/s, {p50 / np.median(base):.0f}x heuristic"
        )
    fresh, growing = [], []
    for _ in range(3):
        runner = BundledRunner()
        for n in range(len(full)):
            start = time.perf_counter()
            BundledRunner().recommend(obs, full[:n])
            fresh.append(time.perf_counter() - start)
            start = time.perf_counter()
            runner.recommend(obs, full[:n])
            growing.append(time.perf_counter() - start)
    a, b = np.median(fresh) * 1000, np.median(growing) * 1000
    print(
        f"bundled over a {len(full)}-answer episode ({len(bundled.model.experts)} experts): "
        f"p50 {a:.2f} ms reading the whole history each call, {b:.2f} ms reading only the "
        f"new answer ({a / b:.1f}x)"
    )
    on = (0.5, 0.5)  # the shipped model has none: the runtime runner does not run it
    off_t, on_t = [], []
    for _ in range(3):
        for n in range(len(full)):
            for tau, sink in (((0.0, 0.0), off_t), (on, on_t)):
                start = time.perf_counter()
                TrialRunner(residual_tau=tau[0], residual_slot_tau=tau[1]).recommend(obs, full[:n])
                sink.append(time.perf_counter() - start)
    c, d = np.median(off_t) * 1000, np.median(on_t) * 1000
    print(
        f"fresh runner over the episode, per-person correction off: p50 {c:.2f} ms; "
        f"on (tau {on[0]}, slot tau {on[1]}): p50 {d:.2f} ms ({d / c:.2f}x)"
    )


if __name__ == "__main__":
    main()
