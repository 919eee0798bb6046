"""Leave one family out: `rhythm-bridge eval --lofo`.

For each family: train a bundled model on the *other* families' train split, tune the
strong no-prior learner on the same training families only, and evaluate both (with
random and the oracle) on the held-out family's `in` and `ood` people. Nothing of the
held-out family is seen before its evaluation.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bridge.sim.evaluate import STRONG, Lineup, _f, evaluate, gap_closed

LOFO_RUNNERS = ("random", "heuristic", "bundled", STRONG, "oracle")


@dataclass(frozen=True)
class FoldBudget:
    """What each fold trains its bundled model on and tunes the strong learner on."""

    train_people: int = 600
    train_slots: int = 112
    tune_people: int = 16
    tune_slots: int = 56


def lofo(
    families: tuple[str, ...],
    *,
    n_people: int = 200,
    seed: int = 0,
    slots: int = 112,
    budget: FoldBudget = FoldBudget(),
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Every fold's report (in and ood) and a summary table; reproducible per seed."""
    from bridge.sim.baselines import TS_GRID, tune_linear_ts
    from bridge.sim.train import train

    folds = []
    with tempfile.TemporaryDirectory(prefix="rb-lofo-") as tmp:
        for held in families:
            rest = tuple(f for f in families if f != held)
            if progress:
                progress(f"fold {held}: training on {', '.join(rest)}")
            path = Path(tmp) / f"without-{held}.npz"
            rep = train(
                path,
                seed=seed,
                n_people=budget.train_people,
                slots=budget.train_slots,
                families=rest,
            )
            if progress:
                progress(f"fold {held}: tuning {STRONG} on {', '.join(rest)}")
            params, trials = tune_linear_ts(
                rest, budget.tune_people, budget.tune_slots, seed, TS_GRID
            )
            fold: dict[str, Any] = {
                "held_out": held,
                "trained_on": list(rest),
                "train": {
                    "people": budget.train_people,
                    "samples": rep.samples,
                    "accept_log_loss": round(rep.accept_log_loss, 4),
                    "delta_rmse": round(rep.delta_rmse, 4),
                    "size_bytes": rep.size_bytes,
                    # chosen without the held-out family (bridge.sim.tempering)
                    "delta_weight": rep.meta.get("delta_weight"),
                    "delta_weight_trials": rep.meta.get("delta_weight_trials"),
                    "expert_temper": rep.meta.get("expert_temper"),
                    "residual_tau": rep.meta.get("residual_tau"),
                    "residual_slot_tau": rep.meta.get("residual_slot_tau"),
                    "residual_trials": rep.meta.get("residual_trials"),
                },
                "linear_ts_params": asdict(params),
                "linear_ts_tuning": trials,
            }
            for split in ("in", "ood"):
                if progress:
                    progress(f"fold {held}: evaluating {split}")
                report = evaluate(
                    split,
                    n_people,
                    seed,
                    lineup=Lineup(LOFO_RUNNERS, model=str(path), ts_params=params),
                    slots=slots,
                    family=held,
                )
                report.pop("model", None)  # a temporary path
                fold[split] = report
            folds.append(fold)
    return {
        "families": list(families),
        "people_per_family": n_people,
        "seed": seed,
        "slots": slots,
        "train_people": budget.train_people,
        "folds": folds,
        "summary": summary(folds),
    }


def summary(folds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per held-out family and split: the figures the issue's targets name."""
    rows = []
    for fold in folds:
        for split in ("in", "ood"):
            rep = fold[split]
            r = rep["runners"]
            b = r["bundled"]
            cal = b.get("calibration") or {}
            rows.append(
                {
                    "held_out": fold["held_out"],
                    "split": split,
                    "constant_mae": rep["constant_belief_mae"],
                    "mae_28": b["belief_mae"]["28"],
                    "acc_9_28": {k: r[k]["acceptance"]["9-28"] for k in r},
                    "gap_closed_9_28": gap_closed(rep),
                    "gap_closed_9_28_strong": gap_closed(rep, STRONG),
                    "to_90": {k: r[k]["interactions_to_90pct_oracle"] for k in r},
                    "brier": cal.get("brier"),
                    "ece": cal.get("ece"),
                    "p50_ms": b["latency_ms"]["p50"],
                    "targets": rep["targets"],
                }
            )
    return rows


def _n(x: int | None, slots: int) -> str:
    return f">{slots}" if x is None else str(x)


def markdown(report: dict[str, Any]) -> str:
    """The per-fold table the README shows."""
    slots = report["slots"]
    head = (
        "| held out | split | const. MAE | MAE@28 | acc 9-28 bundled / linear-ts / random / "
        "oracle | gap closed | to 90% oracle bundled / linear-ts | Brier (ECE) | targets met |"
    )
    lines = [head, "|" + "---|" * 9]
    for row in report["summary"]:
        a, n = row["acc_9_28"], row["to_90"]
        met = sum(t["met"] for t in row["targets"])
        gap = row["gap_closed_9_28"]
        lines.append(
            f"| {row['held_out']} | {row['split']} | {_f(row['constant_mae'])} | "
            f"{_f(row['mae_28'])} | {a['bundled']:.3f} / {a[STRONG]:.3f} / {a['random']:.3f} / "
            f"{a['oracle']:.3f} | {'—' if gap is None else f'{gap:.0%}'} | "
            f"{_n(n['bundled'], slots)} / {_n(n[STRONG], slots)} | "
            f"{_f(row['brier'])} ({_f(row['ece'])}) | {met}/{len(row['targets'])} |"
        )
    return "\n".join(lines)


def format_lofo(report: dict[str, Any]) -> str:
    lines = [
        f"leave one family out: families={','.join(report['families'])} "
        f"people={report['people_per_family']} per family and split, seed={report['seed']}, "
        f"{report['train_people']} training people per fold",
        markdown(report),
    ]
    for row in report["summary"]:
        for t in row["targets"]:
            lines.append(
                f"  {row['held_out']}/{row['split']} [{'met' if t['met'] else 'MISSED'}] "
                f"{t['target']}: {t['value']}"
            )
    return "\n".join(lines)
