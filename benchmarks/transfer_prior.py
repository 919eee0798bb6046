"""The transfer runner and the bundled model on the prior's own kind of people (figures only).

    .venv/bin/python benchmarks/transfer_prior.py --people 100

People drawn from bridge.sim.prior_people at seeds the prior is never fitted on
(PriorSimPerson: late and missing answers, drift, no calendar), 112 interactions each:
acceptance over 9-28, belief MAE after 28 and the share of the random -> oracle gap, for
random, the oracle, `transfer` and `bundled`. It separates what the transfer runner's form
can read from what the families' other forms cost it.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bridge.runner import load_runner
from bridge.sim.baselines import OracleRunner
from bridge.sim.episode import run_episode
from bridge.sim.evaluate import rolling, summarize
from bridge.sim.prior_people import PriorSimPerson


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--people", type=int, default=100)
    args = parser.parse_args()
    results = {}
    oracle_roll = None
    for name in ("oracle", "random", "transfer", "bundled"):
        started = time.time()
        episodes = []
        for i in range(args.people):
            if name == "oracle":
                runner = OracleRunner()
            elif name == "random":
                runner = load_runner("random", seed=i)
            else:
                runner = load_runner(name)
            episodes.append(run_episode(runner, PriorSimPerson(i)))
        results[name] = summarize(episodes, oracle_roll)
        if name == "oracle":
            oracle_roll = rolling(np.array(results[name]["acceptance_curve"]))
        r = results[name]
        mae = r["belief_mae"]["28"]
        print(
            f"{name:<9} acc 9-28 {r['acceptance']['9-28']:.3f}  MAE@28 "
            f"{'—' if mae is None else f'{mae:.3f}'}  ({time.time() - started:.0f} s)"
        )
    lo, hi = results["random"]["acceptance"]["9-28"], results["oracle"]["acceptance"]["9-28"]
    for name in ("transfer", "bundled"):
        gap = (results[name]["acceptance"]["9-28"] - lo) / (hi - lo)
        print(f"{name:<9} gap closed 9-28 {gap:.0%}")
    truth = [np.abs(PriorSimPerson(i).profile(0) - 0.5).mean() for i in range(args.people)]
    print(f"constant-belief MAE {np.mean(truth):.3f}")


if __name__ == "__main__":
    main()
