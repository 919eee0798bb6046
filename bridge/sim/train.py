"""Train the bundled model on simulated people: `rhythm-bridge train-model --seed N`.

What is learned, from simulated interactions only:
- an acceptance model P(accept | action, slot, meters, profile) (one logistic regression
  per action, bilinear in context and profile features);
- a meter-change model E[delta | accepted action, slot, profile] with its spread.
At inference the runner inverts both over a grid of candidate profiles (in context, no
gradient step), so it needs the person's answers, not their profile.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bridge.runner.features import (
    N_CTX,
    N_DCTX,
    N_PROF,
    bilinear,
    booked,
    context,
    delta_context,
    profile_features,
)
from bridge.sim.families import NAMES
from bridge.sim.family import SimPerson
from bridge.sim.population import SPLIT_SEEDS
from bridge.sim.tempering import (
    EXPERT_TEMPERS,
    INNER_TRAIN_PEOPLE,
    RESIDUALS,
    TUNE_PEOPLE,
    choose_delta_weight,
)
from bridge.sim.world import N_ACTIONS, N_METERS
from mappings.actions import ACTIONS

# 2: the slot's calendar (how booked, what is scheduled) in the context; 3: trained on a
# mixture of simulator families; 4: one expert per training family (a leading axis);
# 5: meter changes read at a per-person scale (METER_SCALES), integrated out
MODEL_VERSION = "5"
# A family with fewer training interactions than this gets no expert of its own (a tiny
# CI run): its people still train the pooled fallback when no family has enough.
MIN_EXPERT_SAMPLES = 300
# About 1,500 per family: a family's expert learns from as many of its people as the
# single-family model of version 2 did (with 375, `rhythm` ood read 0.128 against 0.116).
DEFAULT_PEOPLE = 6000
# The meter scales a person's changes are read at (bridge.runner.bundled): 0.5 the weight
# a family's own people are read best at, 0.2 the one transfer to an unseen family wanted.
METER_SCALES = (0.5, 0.2)
DEFAULT_SLOTS = 112
CALENDAR_SHARE = 0.6  # the rest live without a calendar, as a person with no calendar source


@dataclass
class TrainReport:
    path: Path
    seed: int
    people: int
    samples: int
    seconds: float
    accept_log_loss: float
    delta_rmse: float
    size_bytes: int
    meta: dict[str, Any] = field(default_factory=dict)


def _training_person(name: str, index: int, seed: int, rng: np.random.Generator) -> SimPerson:
    from bridge.sim.families import family
    from bridge.sim.families.rhythm import RhythmFamily

    if name == "rhythm":  # rhythm people get a calendar as often as before
        return RhythmFamily(calendars=bool(rng.random() < CALENDAR_SHARE)).person(
            "train", index, seed
        )
    return family(name).person("train", index, seed)


def simulate(
    n_people: int, slots: int, seed: int, families: tuple[str, ...] = ("rhythm",)
) -> dict[str, np.ndarray]:
    """Interactions of training people under random recommendations (wide coverage).

    Each person comes from a family drawn at random from `families` (a randomized
    mixture, reproducible per seed). Recommendations are random among the actions the
    person's calendar has room for, as the pipeline never recommends the others.
    """
    rng = np.random.default_rng([seed, 7])
    ctx, dctx, prof, act, acc, dlt, ok, fam = [], [], [], [], [], [], [], []
    for index in range(n_people):
        which = int(rng.integers(len(families)))
        name = families[which]
        person = _training_person(name, index, seed, rng)
        meters = rng.uniform(0.1, 0.95, N_METERS)  # start anywhere: cover low meters too
        for t in range(slots):
            slot = t % 4
            cal = person.calendar(t)
            if cal is None:
                a, busy, sched = int(rng.integers(N_ACTIONS)), 0.0, None
            else:
                room = [i for i, x in enumerate(ACTIONS) if cal.fits(x)]
                if not room:  # nothing is recommended into a fully booked slot
                    meters = person.advance(t, meters, 0, False, rng)
                    continue
                a = int(room[int(rng.integers(len(room)))])
                busy = booked(cal.free_minutes)
                sched = ACTIONS.index(cal.active_event) if cal.active_event else None
            p = person.accept_probabilities(t, meters, cal)
            accepted = bool(rng.random() < p[a])
            after = person.advance(t, meters, a, accepted, rng)
            ctx.append(context(slot, meters, busy, a == sched))
            dctx.append(delta_context(slot))
            prof.append(person.profile(t))
            act.append(a)
            acc.append(accepted)
            dlt.append(after - meters)
            ok.append(accepted & (after > 0.005) & (after < 0.995))  # clipped deltas lie
            fam.append(which)
            meters = after
            if rng.random() < 0.02:  # an occasional fresh start keeps coverage wide
                meters = rng.uniform(0.1, 0.95, N_METERS)
    return {
        "ctx": np.array(ctx),
        "dctx": np.array(dctx),
        "prof": np.array(prof),
        "action": np.array(act),
        "accepted": np.array(acc, dtype=float),
        "delta": np.array(dlt),
        "delta_ok": np.array(ok),
        "family": np.array(fam, dtype=int),
    }


def _fit_logistic(X: np.ndarray, y: np.ndarray, l2: float = 1e-3, iters: int = 25) -> np.ndarray:
    """Newton's method for L2-regularised logistic regression (small, exact, no sklearn)."""
    w = np.zeros(X.shape[1])
    reg = l2 * len(y) * np.eye(X.shape[1])
    reg[0, 0] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        grad = X.T @ (p - y) + reg @ w
        hess = (X * (p * (1 - p))[:, None]).T @ X + reg
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-6:
            break
    return w


def fit(data: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], float, float]:
    g = profile_features(data["prof"])
    accept_w = np.zeros((N_ACTIONS, N_CTX, N_PROF))
    delta_w = np.zeros((N_ACTIONS, N_DCTX, N_PROF, N_METERS))
    delta_sd = np.zeros((N_ACTIONS, N_METERS))
    losses, sq = [], []
    for a in range(N_ACTIONS):
        rows = data["action"] == a
        X = bilinear(data["ctx"][rows], g[rows])
        y = data["accepted"][rows]
        w = _fit_logistic(X, y)
        accept_w[a] = w.reshape(N_CTX, N_PROF)
        p = np.clip(1 / (1 + np.exp(-(X @ w))), 1e-6, 1 - 1e-6)
        losses.append(-(y * np.log(p) + (1 - y) * np.log(1 - p)))
        Xd = bilinear(data["dctx"][rows], g[rows])
        for m in range(N_METERS):
            keep = data["delta_ok"][rows][:, m]
            Xm, ym = Xd[keep], data["delta"][rows][keep, m]
            coef = np.linalg.solve(Xm.T @ Xm + 1e-3 * np.eye(Xm.shape[1]), Xm.T @ ym)
            delta_w[a, :, :, m] = coef.reshape(N_DCTX, N_PROF)
            resid = ym - Xm @ coef
            # A tiny training run may have no usable change for an action: a wide spread
            # then says "no evidence" instead of a warning.
            delta_sd[a, m] = max(float(resid.std()), 0.01) if len(resid) > 1 else 0.1
            sq.append(resid**2)
    arrays = {"accept_w": accept_w, "delta_w": delta_w, "delta_sd": delta_sd}
    return arrays, float(np.concatenate(losses).mean()), float(np.sqrt(np.concatenate(sq).mean()))


def fit_experts(
    data: dict[str, np.ndarray], families: tuple[str, ...], pooled: bool = True
) -> tuple[list[str], dict[str, np.ndarray], float, float]:
    """One model per family on that family's interactions only, stacked on a leading axis.

    Pooling the families blurs each one's likelihood (a rhythm person read by a model of
    four families was read worse than by a rhythm-only one); separate experts, integrated
    out at inference, keep each sharp. `pooled` adds the model of all of them as one more
    expert: someone of no training family is often read best by it (held-out rhythm, 40
    people, MAE@28: 0.135 with it, 0.147 without). The reported loss and RMSE are over
    every family expert's own interactions.
    """
    names: list[str] = []
    parts: list[dict[str, np.ndarray]] = []
    losses, sq = [], []
    counts = np.bincount(data["family"], minlength=len(families))
    for i, name in enumerate(families):
        if counts[i] < MIN_EXPERT_SAMPLES:
            continue
        rows = data["family"] == i
        arrays, loss, rmse = fit({k: v[rows] for k, v in data.items()})
        names.append(name)
        parts.append(arrays)
        losses.append(loss * counts[i])
        sq.append(rmse**2 * counts[i])
    if pooled or not names:
        arrays, loss, rmse = fit(data)
        names.append("pooled")
        parts.append(arrays)
        if len(names) == 1:
            losses, sq = [loss * counts.sum()], [rmse**2 * counts.sum()]
    n = sum(counts[families.index(x)] for x in names if x != "pooled") or counts.sum()
    stacked = {k: np.stack([p[k] for p in parts]) for k in parts[0]}
    return names, stacked, float(sum(losses) / n), float(np.sqrt(sum(sq) / n))


def _write(path: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    payload: dict[str, Any] = {k: v.astype(np.float32) for k, v in arrays.items()}
    np.savez_compressed(path, meta=np.array(json.dumps(meta, sort_keys=True)), **payload)


def train(
    out: Path,
    *,
    seed: int = 0,
    n_people: int = DEFAULT_PEOPLE,
    slots: int = DEFAULT_SLOTS,
    families: tuple[str, ...] = NAMES,
    temper_people: int = TUNE_PEOPLE,
    pooled: bool = True,
) -> TrainReport:
    """Simulate, fit, and write the artifact as NPZ (arrays only; loaded without pickle).

    With `temper_people` > 0 the meter-change evidence weight is then chosen on that many
    held-in people per training family, each left out of a smaller model in turn
    (bridge.sim.tempering), and stored in the meta.
    """
    started = time.perf_counter()
    data = simulate(n_people, slots, seed, tuple(families))
    experts, arrays, log_loss, rmse = fit_experts(data, tuple(families), pooled)
    meta = {
        "model_version": MODEL_VERSION,
        "seed": seed,
        "people": n_people,
        "slots_per_person": slots,
        "split": "train",
        "families": list(families),
        "experts": experts,
        "split_seed_base": SPLIT_SEEDS["train"],
        "samples": len(data["action"]),
        "accept_log_loss": round(log_loss, 4),
        "delta_rmse": round(rmse, 4),
        "meter_scales": list(METER_SCALES),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp.npz")
    _write(tmp, meta, arrays)
    # A tiny (CI-sized) run tempers on fewer people: at most an eighth of its training
    # people per family, at least 2 (1,500 or 600 people: the full 16).
    temper_people = min(temper_people, max(2, n_people // 8)) if temper_people > 0 else 0
    if temper_people > 0:

        def retrain(path: Path, fams: tuple[str, ...]) -> None:
            small = min(n_people, INNER_TRAIN_PEOPLE)
            train(
                path,
                seed=seed,
                n_people=small,
                slots=slots,
                families=fams,
                temper_people=0,
                pooled=pooled,
            )

        # With two families each inner model has one expert: nothing to temper between.
        tempers = EXPERT_TEMPERS if len(families) > 2 else (1.0,)
        weight, temper, residual, trials = choose_delta_weight(
            str(tmp),
            tuple(families),
            seed=seed,
            people=temper_people,
            retrain=retrain,
            tempers=tempers,
            residuals=RESIDUALS,
        )
        meta["delta_weight"] = weight
        meta["expert_temper"] = temper
        meta["residual_tau"], meta["residual_slot_tau"] = residual
        meta["delta_weight_trials"] = {
            "people_per_family": temper_people,
            "left_out_families": len(families) > 1,
            "mae_28": {k: v for k, v in trials.items() if "accept" not in k},
        }
        meta["residual_trials"] = {k: v for k, v in trials.items() if "accept" in k}
        _write(tmp, meta, arrays)
    tmp.replace(out)
    return TrainReport(
        out,
        seed,
        n_people,
        len(data["action"]),
        time.perf_counter() - started,
        log_loss,
        rmse,
        out.stat().st_size,
        meta,
    )
