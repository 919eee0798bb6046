"""The transfer runner on every family of simulated people, beside version 5 (figures only).

    .venv/bin/python benchmarks/transfer_lofo.py --people 200 --json docs/lofo-transfer.json

The transfer runner's prior is fitted on bridge.sim.prior_people only, never on a family,
so every family is held out from it and one artifact serves every fold. For each family and
split (in, ood) it runs random, transfer and the oracle on the same people `eval --lofo`
uses (same seed, same indices: random's and the oracle's figures equal those in
docs/lofo.json), and prints the transfer runner's belief MAE after 28 answers and its share
of the random -> oracle gap over interactions 9-28 beside those of version 5 (`bundled`,
trained on the other three families) and the tuned no-prior learner (`linear-ts`) from
docs/lofo.json when the number of people matches.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bridge.sim.evaluate import Lineup, evaluate, gap_closed

FAMILIES = ("rhythm", "fatigue", "habits", "shifts")
BASELINE = Path(__file__).resolve().parent.parent / "docs" / "lofo.json"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--people", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    base = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    same = base.get("people_per_family") == args.people and base.get("seed") == args.seed
    before = {(r["held_out"], r["split"]): r for r in base.get("summary", [])} if same else {}
    rows = {}
    print(
        "| family | split | const. MAE | MAE@28 transfer / bundled v5 | gap closed 9-28 "
        "transfer / bundled v5 / linear-ts | acc 9-28 transfer / random / oracle | to 90% "
        "oracle | p50 ms |"
    )
    print("|" + "---|" * 8)
    for fam in FAMILIES:
        for split in ("in", "ood"):
            started = time.time()
            rep = evaluate(
                split,
                args.people,
                args.seed,
                lineup=Lineup(("random", "transfer", "oracle")),
                family=fam,
            )
            r = rep["runners"]
            t = r["transfer"]
            row = {
                "constant_mae": rep["constant_belief_mae"],
                "acc_9_28": {k: r[k]["acceptance"]["9-28"] for k in r},
                "belief_mae": t["belief_mae"],
                "gap_closed_9_28": gap_closed(rep, "transfer"),
                "to_90": t["interactions_to_90pct_oracle"],
                "calibration": {
                    k: v for k, v in (t["calibration"] or {}).items() if k != "reliability"
                },
                "belief_sd": t["belief_sd"],
                "latency_ms": t["latency_ms"],
                "seconds": round(time.time() - started, 1),
            }
            rows[f"{fam}/{split}"] = row
            old = before.get((fam, split))
            b_mae = f"{old['mae_28']:.3f}" if old else "—"
            b_gap = f"{old['gap_closed_9_28']:.0%}" if old else "—"
            ts_gap = f"{old['gap_closed_9_28_strong']:.0%}" if old else "—"
            a = row["acc_9_28"]
            print(
                f"| {fam} | {split} | {row['constant_mae']:.3f} | "
                f"{t['belief_mae']['28']:.3f} / {b_mae} | {row['gap_closed_9_28']:.0%} / {b_gap} "
                f"/ {ts_gap} | {a['transfer']:.3f} / {a['random']:.3f} / {a['oracle']:.3f} | "
                f"{row['to_90'] if row['to_90'] is not None else '>112'} | "
                f"{t['latency_ms']['p50']:.2f} |",
                flush=True,
            )
    if args.json:
        out = {"people": args.people, "seed": args.seed, "slots": 112, "results": rows}
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
