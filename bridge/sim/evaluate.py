"""`rhythm-bridge eval`: every runner over the same simulated people, 112 slots each."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from bridge.sim.baselines import BanditRunner, OracleRunner
from bridge.sim.episode import SLOTS_PER_EPISODE, Episode, run_episode
from bridge.sim.population import SPLIT_SEEDS, people
from bridge.sim.world import Person

RUNNERS = ("random", "heuristic", "bundled", "no-prior", "oracle")
ADAPTED = "bundled+adapter"
BLIND = "bundled-blind"  # with calendars: never over busy time, but not reading how booked
PREVIOUS_MONTH = 10_000_000  # seed offset of the simulated month the adapter is fitted on
WINDOWS = ((1, 8), (9, 28), (29, 112))
MAE_AFTER = (8, 28, 112)
ROLLING = 4  # trailing window of "rolling acceptance": one day of slots (evens out the daily cycle)
SPLIT_NAMES = {"in": "in", "ood": "ood"}


def _with_adapter(person: Person, calendar: bool = False) -> Any:
    """Phase 3 in simulation: a month of answers with `bundled`, then a refitted adapter."""
    from bridge.runner.adapter import fit_adapter
    from bridge.runner.bundled import BundledRunner, load_model

    # The same person in an earlier month: same profile, different luck.
    before = replace(person, seed=person.seed + PREVIOUS_MONTH)
    history = run_episode(BundledRunner(), before, calendar=calendar).history()
    return BundledRunner(adapter=fit_adapter(history, load_model()))


def _make(name: str, person: Person, index: int, calendar: bool = False) -> Any:
    from bridge.runner import load_runner

    if name == ADAPTED:
        return _with_adapter(person, calendar)
    if name == BLIND:
        from bridge.runner.bundled import BundledRunner

        return BundledRunner(calendar=False)
    if name == "oracle":
        return OracleRunner(person)
    if name == "no-prior":
        return BanditRunner(seed=index)
    if name == "random":
        return load_runner("random", seed=index)
    return load_runner(name)


def rolling(curve: np.ndarray, window: int = ROLLING) -> np.ndarray:
    """Trailing mean: entry i averages interactions max(1, i-window+1)..i."""
    c = np.cumsum(np.insert(curve, 0, 0.0))
    idx = np.arange(1, len(curve) + 1)
    lo = np.maximum(0, idx - window)
    return (c[idx] - c[lo]) / (idx - lo)


def _mae(beliefs: list[list[float] | None], truth: np.ndarray) -> float | None:
    if any(b is None for b in beliefs):
        return None
    return float(np.abs(np.array(beliefs, dtype=float) - truth).mean())


def summarize(episodes: list[Episode], oracle_roll: np.ndarray | None) -> dict[str, Any]:
    acc = np.array([e.accepted for e in episodes], dtype=float)
    curve = acc.mean(0)
    truth = np.array([e.person.belief for e in episodes])
    out: dict[str, Any] = {
        "acceptance": {f"{a}-{b}": float(acc[:, a - 1 : b].mean()) for a, b in WINDOWS},
        "acceptance_curve": [round(float(x), 4) for x in curve],
    }
    roll = rolling(curve)
    out["interactions_to_90pct_oracle"] = None
    if oracle_roll is not None:
        hit = np.nonzero(roll >= 0.9 * oracle_roll)[0]
        out["interactions_to_90pct_oracle"] = int(hit[0]) + 1 if len(hit) else None
    mae = {}
    for k in MAE_AFTER:
        beliefs = [e.final_belief if k >= len(e.beliefs) else e.beliefs[k] for e in episodes]
        mae[str(k)] = _mae(beliefs, truth)
    out["belief_mae"] = mae
    crashed = np.array([e.crashed for e in episodes])
    out["crash_rate"] = float(crashed.mean())
    out["people_with_crash"] = float(crashed.any(1).mean())
    lat = np.concatenate([e.latencies for e in episodes]) * 1000.0
    out["latency_ms"] = {"p50": float(np.percentile(lat, 50)), "p99": float(np.percentile(lat, 99))}
    out["runner_errors"] = int(sum(e.errors for e in episodes))
    if episodes and episodes[0].calendar is not None:
        # A recommendation of an action no free stretch of its slot is long enough for
        # could only be done over busy time.
        overlaps = [o for e in episodes for o in e.overlaps]
        out["busy_overlap_share"] = float(np.mean(overlaps)) if overlaps else 0.0
        slots_seen = sum(len(e.actions) + e.skipped for e in episodes)
        out["booked_slots_skipped"] = sum(e.skipped for e in episodes) / max(1, slots_seen)
    return out


def evaluate(
    split: str = "in",
    n_people: int = 200,
    seed: int = 0,
    runners: tuple[str, ...] = RUNNERS,
    slots: int = SLOTS_PER_EPISODE,
    progress: Callable[[str], None] | None = None,
    calendars: bool = False,
) -> dict[str, Any]:
    """Run each runner over the same people; the report `rhythm-bridge eval` prints.

    With `calendars`, every person lives with a simulated calendar; the report adds each
    runner's share of recommendations over busy time, and the bundled runner's acceptance
    for the same people without calendars, for comparison.
    """
    if split not in SPLIT_NAMES:
        raise ValueError(f"unknown split {split!r}; use 'in' or 'ood'")
    population = people(split, n_people, seed)
    order = ["oracle", *(r for r in runners if r != "oracle")]  # others compare to it
    results: dict[str, Any] = {}
    oracle_roll = None
    for name in order:
        if progress:
            progress(name)
        eps = [
            run_episode(_make(name, p, i, calendars), p, slots, calendar=calendars)
            for i, p in enumerate(population)
        ]
        results[name] = summarize(eps, oracle_roll)
        if name == "oracle":
            oracle_roll = rolling(np.array(results[name]["acceptance_curve"]))
            results[name]["interactions_to_90pct_oracle"] = 1
    truth = np.array([p.belief for p in population])
    without = None
    if calendars and "bundled" in runners:
        if progress:
            progress("bundled without calendars")
        eps = [run_episode(_make("bundled", p, i), p, slots) for i, p in enumerate(population)]
        without = summarize(eps, None)
    report = {
        "calendars": calendars,
        "split": split,
        "people": n_people,
        "slots": slots,
        "seed": seed,
        "person_seeds": [
            SPLIT_SEEDS[split] + seed * 100_000,
            SPLIT_SEEDS[split] + seed * 100_000 + n_people - 1,
        ],
        "constant_belief_mae": float(np.abs(truth - 0.5).mean()),
        "runners": {name: results[name] for name in runners if name in results},
    }
    if without is not None:
        report["bundled_without_calendars"] = {
            "acceptance": without["acceptance"],
            "belief_mae": without["belief_mae"],
        }
    report["targets"] = targets(report)
    return report


def _ratio(report: dict[str, Any], runner: str, window: str) -> float:
    r = report["runners"]
    return r[runner]["acceptance"][window] / r["oracle"]["acceptance"][window]


def targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets for the bundled runner, each with its measured value."""
    r = report["runners"]
    if not {"bundled", "oracle"} <= set(r):
        return []
    b = r["bundled"]
    rows: list[dict[str, Any]] = []

    def add(name: str, value: Any, ok: bool) -> None:
        rows.append({"target": name, "value": value, "met": bool(ok)})

    if report.get("calendars"):
        share = b["busy_overlap_share"]
        add("bundled recommendations over busy time = 0", share, share == 0.0)

    if report["split"] == "in":
        mae = b["belief_mae"]["28"]
        add("belief MAE after 28 <= 0.12", mae, mae is not None and mae <= 0.12)
        q = _ratio(report, "bundled", "9-28")
        add("acceptance 9-28 >= 90% of oracle", round(q, 3), q >= 0.9)
        q = _ratio(report, "bundled", "29-112")
        add("acceptance 29-112 >= 95% of oracle", round(q, 3), q >= 0.95)
        n = b["interactions_to_90pct_oracle"]
        add("interactions to 90% of oracle <= 8", n, n is not None and n <= 8)
        if "no-prior" in r:
            m = r["no-prior"]["interactions_to_90pct_oracle"]
            limit = report["slots"] + 1 if m is None else m  # never reached counts as > slots
            add(
                "at least 5x fewer than no-prior",
                f"{n} vs {'>' + str(report['slots']) if m is None else m}",
                n is not None and 5 * n <= limit,
            )
        p50 = b["latency_ms"]["p50"]
        add("p50 latency <= 5 ms", round(p50, 2), p50 <= 5.0)
    else:
        mae = b["belief_mae"]["28"]
        add("OOD belief MAE after 28 <= 0.15", mae, mae is not None and mae <= 0.15)
        for other in ("heuristic", "no-prior"):
            if other in r:
                mine, theirs = b["acceptance"]["9-28"], r[other]["acceptance"]["9-28"]
                add(
                    f"OOD acceptance 9-28 ahead of {other}",
                    f"{mine:.3f} vs {theirs:.3f}",
                    mine > theirs + 0.03,
                )
    return rows


def format_table(report: dict[str, Any]) -> str:
    """The report as a plain-text table (the README shows the same in Markdown)."""
    lines = [
        f"split={report['split']} calendars={'yes' if report.get('calendars') else 'no'} "
        f"people={report['people']} slots={report['slots']} "
        f"seed={report['seed']} (constant [0.5,0.5,0.5] belief MAE: "
        f"{report['constant_belief_mae']:.3f})",
        markdown_table(report),
    ]
    if report.get("calendars"):
        shares = ", ".join(
            f"{name} {r['busy_overlap_share']:.3f}" for name, r in report["runners"].items()
        )
        lines.append(f"share of recommendations over busy time: {shares}")
        w = report.get("bundled_without_calendars")
        if w and "bundled" in report["runners"]:
            a, b = report["runners"]["bundled"]["acceptance"], w["acceptance"]
            lines.append(
                "bundled acceptance with vs without calendars: "
                + ", ".join(f"{k} {a[k]:.3f} vs {b[k]:.3f}" for k in a)
            )
    for t in report["targets"]:
        lines.append(f"  [{'met' if t['met'] else 'MISSED'}] {t['target']}: {t['value']}")
    return "\n".join(lines)


def _f(x: float | None, fmt: str = ".3f") -> str:
    return "—" if x is None else format(x, fmt)


def markdown_table(report: dict[str, Any]) -> str:
    head = (
        "| runner | acc 1-8 | acc 9-28 | acc 29-112 | to 90% oracle | MAE@8 | MAE@28 | "
        "MAE@112 | crash rate | p50 ms | p99 ms |"
    )
    rows = [head, "|" + "---|" * 11]
    for name, r in report["runners"].items():
        a, m, lat = r["acceptance"], r["belief_mae"], r["latency_ms"]
        n = r["interactions_to_90pct_oracle"]
        rows.append(
            f"| {name} | {a['1-8']:.3f} | {a['9-28']:.3f} | {a['29-112']:.3f} | "
            f"{n if n is not None else '>' + str(report['slots'])} | {_f(m['8'])} | "
            f"{_f(m['28'])} | {_f(m['112'])} | {r['crash_rate']:.3f} | {lat['p50']:.2f} | "
            f"{lat['p99']:.2f} |"
        )
    return "\n".join(rows)
