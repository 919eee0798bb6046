"""How the bundled runner's per-person correction was chosen on HeartSteps (figures only).

    .venv/bin/python benchmarks/heartsteps_recalibrate.py [../shared/datasets/heartsteps]

The runner's own P(accept) is replayed once per person (bridge.sim.heartsteps, the
correction off), each answered item carrying what the runner stated for it before its
answer. Every correction of the grid is then applied to the same predictions: a logit shift
b ~ N(0, sd^2), an answer's weight halved every `half_life` answers (0: never), with or
without a slope on the runner's logit (prior N(0, 0.25^2) on its change from 1). The grid
value chosen for each person is the one with the lowest per-person mean log-loss on the
other people (leave one person out); the replay's runner-bundled uses the shipped values
(bridge.runner.recalibrate), which is the same for every person when the choice is.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import numpy as np

from bridge.runner.online import laplace
from bridge.runner.recalibrate import HALF_LIFE, SD, shift, stated_answers
from bridge.sim.heartsteps import ProductRunner, load, replay

GRID = [(sd, slope, hl) for sd in (0.25, 0.5, 1.0, 2.0) for slope in (0.0, 0.25) for hl in (0, 50)]
SHIPPED = (SD, 0.0, HALF_LIFE)


def _logit(p: float | np.ndarray) -> Any:
    q = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(q) - np.log1p(-q)


def corrected(p: float, history: list[dict[str, Any]], config: tuple[float, float, float]) -> float:
    sd, slope, half_life = config
    if not slope:
        b = shift(history, sd, half_life)
        return float(1 / (1 + np.exp(-(_logit(p) + b))))
    stated, answers = stated_answers(history)
    n = len(stated)
    if not n:
        return p
    weight = 0.5 ** (np.arange(n - 1, -1, -1) / half_life) if half_life else np.ones(n)
    z = np.column_stack([np.ones(n), _logit(stated)])
    fit = laplace(np.zeros(2), np.diag([sd**2, slope**2]), (z, answers, _logit(stated), weight))
    b, a = fit.mean
    return float(1 / (1 + np.exp(-((1 + a) * _logit(p) + b))))


def _loss(p: float, y: int) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return -(y * math.log(p) + (1 - y) * math.log(1 - p))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", nargs="?", default="../shared/datasets/heartsteps")
    args = parser.parse_args()
    seen: dict[str, list[tuple[float, list[dict[str, Any]], int]]] = {}
    for person in load(Path(args.folder)):
        runner = ProductRunner("bundled", sd=0.0)
        asked: list[tuple[float, list[dict[str, Any]]]] = []
        own = runner.predict

        def predict(
            x: np.ndarray, runner: ProductRunner = runner, own: Any = own, asked: list = asked
        ) -> float:
            p = own(x)
            asked.append((p, list(runner.history)))
            return p

        runner.predict = predict  # type: ignore[method-assign]
        preds = replay(person, runner)
        seen[person.name] = [(p, h, q.y) for (p, h), q in zip(asked, preds, strict=True)]
    losses = {
        c: {n: [_loss(corrected(p, h, c), y) for p, h, y in rows] for n, rows in seen.items()}
        for c in [(0.0, 0.0, 0.0), *GRID]
    }
    for c, per in losses.items():
        flat = [v for rows in per.values() for v in rows]
        mean = np.mean([np.mean(rows) for rows in per.values()])
        print(f"sd {c[0]:<4} slope {c[1]:<4} half-life {c[2]:<4}  {np.mean(flat):.4f}  {mean:.4f}")
    chosen = {
        held: min(GRID, key=lambda c: np.mean([np.mean(losses[c][n]) for n in seen if n != held]))
        for held in seen
    }
    flat = [v for n in seen for v in losses[chosen[n]][n]]
    mean = np.mean([np.mean(losses[chosen[n]][n]) for n in seen])
    print(f"leave one person out: {np.mean(flat):.4f} overall, {mean:.4f} per person")
    print(f"chosen: {sorted(set(chosen.values()))}; shipped: {SHIPPED}")


if __name__ == "__main__":
    main()
