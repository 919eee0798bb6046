"""`rhythm-bridge eval`: every runner over the same simulated people, 112 slots each."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from bridge.sim.baselines import BanditRunner, LinearTSParams, LinearTSRunner, OracleRunner
from bridge.sim.episode import SLOTS_PER_EPISODE, Episode, run_episode
from bridge.sim.family import Family, SimPerson
from bridge.sim.population import SPLIT_SEEDS

RUNNERS = ("random", "heuristic", "bundled", "no-prior", "linear-ts", "oracle")
STRONG = "linear-ts"  # the strong no-prior learner the "3x fewer" is measured against
ADAPTED = "bundled+adapter"
BLIND = "bundled-blind"  # with calendars: never over busy time, but not reading how booked
PREVIOUS_MONTH = 10_000_000  # seed offset of the simulated month the adapter is fitted on
WINDOWS = ((1, 8), (9, 28), (29, 112))
MAE_AFTER = (8, 28, 112)
ROLLING = 4  # trailing window of "rolling acceptance": one day of slots (evens out the daily cycle)
SPLIT_NAMES = {"in": "in", "ood": "ood"}


def _with_adapter(person: SimPerson, model: str | None = None) -> Any:
    """Phase 3 in simulation: a month of answers with `bundled`, then a refitted adapter."""
    from bridge.runner.adapter import fit_adapter
    from bridge.sim.families.rhythm import RhythmPerson
    from bridge.sim.trials import bundled_runner

    if not isinstance(person, RhythmPerson):
        raise ValueError("--adapter needs the same person in an earlier month: rhythm only")
    # The same person in an earlier month: same profile, different luck.
    before = replace(person.person, seed=person.seed + PREVIOUS_MONTH)
    first = bundled_runner(model)
    history = run_episode(first, RhythmPerson(before, person.calendars)).history()
    return bundled_runner(model, adapter=fit_adapter(history, first.model))


def _make(
    name: str,
    person: SimPerson,
    index: int,
    model: str | None = None,
    ts_params: LinearTSParams | None = None,
) -> Any:
    from bridge.runner import load_runner

    if name == ADAPTED:
        return _with_adapter(person, model)
    if name == BLIND:
        from bridge.sim.trials import bundled_runner

        return bundled_runner(model, calendar=False)
    if name == "oracle":
        return OracleRunner()
    if name == "no-prior":
        return BanditRunner(seed=index)
    if name == STRONG:
        return LinearTSRunner(seed=index, **({"params": ts_params} if ts_params else {}))
    if name == "random":
        return load_runner("random", seed=index)
    if name == "bundled" and model:
        from bridge.sim.trials import bundled_runner

        return bundled_runner(model)
    return load_runner(name)


def rolling(curve: np.ndarray, window: int = ROLLING) -> np.ndarray:
    """Trailing mean: entry i averages interactions max(1, i-window+1)..i."""
    c = np.cumsum(np.insert(curve, 0, 0.0))
    idx = np.arange(1, len(curve) + 1)
    lo = np.maximum(0, idx - window)
    return (c[idx] - c[lo]) / (idx - lo)


def _mae(beliefs: list[list[float] | None], truth: list[list[float] | None]) -> float | None:
    if any(b is None for b in beliefs) or any(t is None for t in truth):
        return None
    return float(np.abs(np.array(beliefs, dtype=float) - np.array(truth, dtype=float)).mean())


CALIBRATION_BINS = 10


def belief_sd_check(episodes: list[Episode], k: int = 28) -> dict[str, float] | None:
    """Is the stated posterior sd honest? After k answers: the mean sd, the mean absolute
    error, and the share of axes whose truth lies within 1 and 2 sd of the belief (about
    0.68 and 0.95 if the posterior were calibrated and Gaussian)."""
    pairs = [
        (e.beliefs[k], e.sds[k], e.truths[k])
        for e in episodes
        if len(e.sds) > k and e.sds[k] is not None and e.beliefs[k] is not None
    ]
    if not pairs:
        return None
    b, sd, t = (np.array(x, dtype=float) for x in zip(*pairs, strict=True))
    z = np.abs(b - t) / np.maximum(sd, 1e-6)
    return {
        "after": k,
        "mean_sd": round(float(sd.mean()), 4),
        "mae": round(float(np.abs(b - t).mean()), 4),
        "within_1sd": round(float((z <= 1).mean()), 4),
        "within_2sd": round(float((z <= 2).mean()), 4),
    }


def calibration(episodes: list[Episode]) -> dict[str, Any] | None:
    """The runner's P(accept) for what it recommended vs what happened.

    A reliability table (10 equal-width bins of the predicted probability: how many, the
    mean prediction, the observed acceptance) and the Brier score; None for a runner that
    states no probability.
    """
    pairs = [
        (p, float(a))
        for e in episodes
        for p, a in zip(e.expected, e.accepted, strict=True)
        if p is not None
    ]
    if not pairs:
        return None
    p, y = np.array(pairs).T
    p = np.clip(p, 0.0, 1.0)
    idx = np.minimum((p * CALIBRATION_BINS).astype(int), CALIBRATION_BINS - 1)
    table: list[dict[str, Any]] = []
    for b in range(CALIBRATION_BINS):
        sel = idx == b
        n = int(sel.sum())
        table.append(
            {
                "bin": f"{b / CALIBRATION_BINS:.1f}-{(b + 1) / CALIBRATION_BINS:.1f}",
                "n": n,
                "predicted": round(float(p[sel].mean()), 4) if n else None,
                "observed": round(float(y[sel].mean()), 4) if n else None,
            }
        )
    # Expected calibration error: the bins' |predicted - observed| weighted by their size.
    ece = sum(r["n"] * abs(r["predicted"] - r["observed"]) for r in table if r["n"]) / len(p)
    return {
        "brier": round(float(np.mean((p - y) ** 2)), 4),
        "brier_of_base_rate": round(float(np.mean((y.mean() - y) ** 2)), 4),
        "ece": round(float(ece), 4),
        "reliability": table,
    }


def summarize(episodes: list[Episode], oracle_roll: np.ndarray | None) -> dict[str, Any]:
    acc = np.array([e.accepted for e in episodes], dtype=float)
    curve = acc.mean(0)
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
        truth = [e.final_truth if k >= len(e.truths) else e.truths[k] for e in episodes]
        mae[str(k)] = _mae(beliefs, truth)
    out["belief_mae"] = mae
    out["belief_sd"] = belief_sd_check(episodes)
    out["calibration"] = calibration(episodes)
    answers = sum(len(e.actions) for e in episodes)
    out["late_answer_share"] = sum(e.late for e in episodes) / max(1, answers)
    out["unanswered_share"] = sum(e.unanswered for e in episodes) / max(1, answers)
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


def _family(name: str, calendars: bool) -> Family:
    from bridge.sim.families import family
    from bridge.sim.families.rhythm import RhythmFamily

    if name == "rhythm":
        return RhythmFamily(calendars=calendars)
    return family(name)


@dataclass(frozen=True)
class Lineup:
    """The runners compared, by name; the bundled runner's artifact (None: the shipped
    one) and the strong no-prior learner's hyper-parameters (None: the documented ones)."""

    runners: tuple[str, ...] = RUNNERS
    model: str | None = None
    ts_params: LinearTSParams | None = None


def evaluate(
    split: str = "in",
    n_people: int = 200,
    seed: int = 0,
    *,
    lineup: Lineup = Lineup(),
    slots: int = SLOTS_PER_EPISODE,
    progress: Callable[[str], None] | None = None,
    calendars: bool = False,
    family: str = "rhythm",
) -> dict[str, Any]:
    """Run each runner over the same people; the report `rhythm-bridge eval` prints.

    `family` names the simulated people (bridge.sim.families; rhythm by default, as
    before). With `calendars`, every rhythm person lives with a simulated calendar (other
    families bring their own); the report adds each runner's share of recommendations over
    busy time, and the bundled runner's acceptance for the same people without calendars.
    """
    runners, model, ts_params = lineup.runners, lineup.model, lineup.ts_params
    if split not in SPLIT_NAMES:
        raise ValueError(f"unknown split {split!r}; use 'in' or 'ood'")
    fam = _family(family, calendars)
    order = ["oracle", *(r for r in runners if r != "oracle")]  # others compare to it
    results: dict[str, Any] = {}
    oracle_roll = None
    first: list[Episode] = []
    for name in order:
        if progress:
            progress(name)
        eps = []
        for i in range(n_people):
            person = fam.person(split, i, seed)  # fresh for every runner: people keep state
            runner = _make(name, person, i, model, ts_params)
            eps.append(run_episode(runner, person, slots))
        first = first or eps
        results[name] = summarize(eps, oracle_roll)
        if name == "oracle":
            oracle_roll = rolling(np.array(results[name]["acceptance_curve"]))
            results[name]["interactions_to_90pct_oracle"] = 1
    truth = np.array([e.truths[0] for e in first]) if first else np.zeros((0, 3))
    without = None
    if calendars and family == "rhythm" and "bundled" in runners:
        if progress:
            progress("bundled without calendars")
        plain = _family("rhythm", False)
        eps = [
            run_episode(
                _make("bundled", plain.person(split, i, seed), i, model),
                plain.person(split, i, seed),
                slots,
            )
            for i in range(n_people)
        ]
        without = summarize(eps, None)
    report: dict[str, Any] = {
        "family": family,
        "calendars": calendars,
        "split": split,
        "people": n_people,
        "slots": slots,
        "seed": seed,
    }
    if family == "rhythm":
        report["person_seeds"] = [
            SPLIT_SEEDS[split] + seed * 100_000,
            SPLIT_SEEDS[split] + seed * 100_000 + n_people - 1,
        ]
    else:
        report["person_seeds"] = [e.person.seed for e in first[:1] + first[-1:]]
    report["constant_belief_mae"] = float(np.abs(truth - 0.5).mean()) if len(truth) else None
    report["runners"] = {name: results[name] for name in runners if name in results}
    if model:
        report["model"] = str(model)
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

    if report.get("family", "rhythm") != "rhythm":
        return transfer_targets(report)  # the older targets were set for rhythm only
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
    rows.extend(transfer_targets(report))
    return rows


def gap_closed(
    report: dict[str, Any], runner: str = "bundled", window: str = "9-28"
) -> float | None:
    """Share of the random -> oracle acceptance gap `runner` closes over `window`."""
    r = report["runners"]
    if not {runner, "random", "oracle"} <= set(r):
        return None
    lo, hi = r["random"]["acceptance"][window], r["oracle"]["acceptance"][window]
    if hi - lo <= 1e-9:
        return None
    return (r[runner]["acceptance"][window] - lo) / (hi - lo)


def _reached(n: int | None, slots: int) -> str:
    return str(n) if n is not None else f">{slots}"


def transfer_targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 22's targets on any family (held out from training in `eval --lofo`)."""
    r = report["runners"]
    b = r["bundled"]
    rows: list[dict[str, Any]] = []

    def add(name: str, value: Any, ok: bool) -> None:
        rows.append({"target": name, "value": value, "met": bool(ok)})

    mae = b["belief_mae"]["28"]
    add("family: belief MAE after 28 <= 0.14", mae, mae is not None and mae <= 0.14)
    q = gap_closed(report)
    if q is not None:
        add("family: acceptance 9-28 closes >= 80% of random->oracle gap", round(q, 3), q >= 0.8)
    n = b["interactions_to_90pct_oracle"]
    add("family: interactions to 90% of oracle <= 8", n, n is not None and n <= 8)
    if STRONG in r:
        m = r[STRONG]["interactions_to_90pct_oracle"]
        limit = report["slots"] + 1 if m is None else m  # never reached counts as > slots
        add(
            f"family: at least 3x fewer than {STRONG}",
            f"{_reached(n, report['slots'])} vs {_reached(m, report['slots'])}",
            n is not None and 3 * n <= limit,
        )
    return rows


def format_table(report: dict[str, Any]) -> str:
    """The report as a plain-text table (the README shows the same in Markdown)."""
    lines = [
        f"family={report.get('family', 'rhythm')} split={report['split']} "
        f"calendars={'yes' if report.get('calendars') else 'no'} "
        f"people={report['people']} slots={report['slots']} "
        f"seed={report['seed']} (constant [0.5,0.5,0.5] belief MAE: "
        f"{_f(report['constant_belief_mae'])})",
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
    for name, r in report["runners"].items():
        cal = r.get("calibration")
        if cal and name != "oracle":
            lines.append(
                f"calibration of {name}'s P(accept): Brier {cal['brier']:.4f} (base rate "
                f"{cal['brier_of_base_rate']:.4f}), ECE {cal['ece']:.4f}; "
                + " ".join(
                    f"{row['bin']}:{row['predicted']:.2f}->{row['observed']:.2f}(n={row['n']})"
                    for row in cal["reliability"]
                    if row["n"]
                )
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
