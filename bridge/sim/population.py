"""The simulated population and its splits, each drawn from an explicit seed."""

from __future__ import annotations

import numpy as np

from bridge.sim.world import Person

# Training and held-out in-distribution people share these ranges; out-of-distribution
# people have at least one profile value outside them and noisier answers.
PROFILE_RANGE = (0.1, 0.9)
NOISE_RANGE = (0.03, 0.12)
STRESS_RANGE = (0.5, 1.0)
RECOVERY_RANGE = (0.8, 1.2)
OOD_NOISE_RANGE = (0.12, 0.25)
OOD_STRESS_RANGE = (0.3, 0.5)
OOD_RECOVERY_RANGE = (0.6, 0.8)

# Seed bases keep the splits disjoint whatever N is asked for.
SPLIT_SEEDS = {"train": 0, "in": 1_000_000, "ood": 2_000_000}
SPLITS = tuple(SPLIT_SEEDS)


def _outside(rng: np.random.Generator) -> float:
    lo, hi = PROFILE_RANGE
    return float(rng.uniform(0.0, lo) if rng.random() < 0.5 else rng.uniform(hi, 1.0))


def person(split: str, index: int, seed: int = 0) -> Person:
    """Person `index` of `split`; the same arguments always give the same person."""
    if split not in SPLIT_SEEDS:
        raise ValueError(f"unknown split {split!r}; choose one of: {', '.join(SPLITS)}")
    person_seed = SPLIT_SEEDS[split] + seed * 100_000 + index
    rng = np.random.default_rng(person_seed)
    profile = [float(x) for x in rng.uniform(*PROFILE_RANGE, 3)]
    if split == "ood":
        out = rng.random(3) < 0.5
        out[rng.integers(3)] = True  # at least one axis outside the training range
        profile = [_outside(rng) if o else p for o, p in zip(out, profile, strict=True)]
        noise, stress, recovery = OOD_NOISE_RANGE, OOD_STRESS_RANGE, OOD_RECOVERY_RANGE
    else:
        noise, stress, recovery = NOISE_RANGE, STRESS_RANGE, RECOVERY_RANGE
    return Person(
        social=profile[0],
        morning=profile[1],
        work=profile[2],
        answer_noise=float(rng.uniform(*noise)),
        stress_tolerance=float(rng.uniform(*stress)),
        recovery=float(rng.uniform(*recovery)),
        seed=person_seed,
    )


def people(split: str, n: int, seed: int = 0) -> list[Person]:
    return [person(split, i, seed) for i in range(n)]
