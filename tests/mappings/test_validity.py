"""Agreement statistics and weights fitted to a person (mappings/validity.py)."""

from __future__ import annotations

import numpy as np

from mappings.validity import (
    FIT_MIN_DAYS,
    agreement,
    combine,
    fit_weights,
    forward_fit,
    spearman,
)


def test_spearman_and_the_interval():
    x = np.arange(30.0)
    assert spearman(x, x) == 1.0 and spearman(x, -x) == -1.0
    assert spearman(np.array([1.0, 1, 2, 2]), np.array([1.0, 2, 3, 4])) > 0.8  # ties
    a = agreement(x, x + np.sin(x) * 3)
    assert a.n == 30 and a.lo is not None and a.lo <= a.rho <= a.hi
    assert agreement(x[:13], x[:13]).rho is None  # fewer than 14 paired days


def _inputs(days: int = 60, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.1, 0.9, size=(days, 2))


def test_a_person_whose_fitted_weights_are_worse_keeps_the_bundled_ones():
    scores = _inputs()
    prior = np.array([0.3, 0.15])
    # What they say is exactly what the bundled weights make: no fit can do better.
    target = combine(scores, prior)
    fit = forward_fit(scores, target, prior)
    assert fit is not None and fit.forward_bundled == 1.0
    assert not fit.better


def test_a_person_who_follows_another_input_gets_weights_that_track_them_better():
    scores = _inputs()
    prior = np.array([0.3, 0.15])
    target = scores[:, 1] + np.random.default_rng(2).normal(0, 0.05, len(scores))
    fit = forward_fit(scores, target, prior)
    assert fit is not None and fit.better
    assert fit.forward_fitted > fit.forward_bundled
    # Shrunk toward the bundled weights: moved toward the second input, same total.
    assert fit.weights[1] > 0.15 and abs(fit.weights.sum() - prior.sum()) < 1e-9


def test_too_few_paired_days_fit_nothing():
    scores = _inputs(days=FIT_MIN_DAYS - 1)
    assert forward_fit(scores, scores[:, 0], np.array([0.3, 0.15])) is None
    # Missing inputs pull nowhere; a fit without a usable day is the prior itself.
    none = np.full((5, 2), np.nan)
    assert fit_weights(none, np.arange(5.0), np.array([0.3, 0.15])).tolist() == [0.3, 0.15]
