"""Agreement statistics and weights fitted to a person (mappings/validity.py)."""

from __future__ import annotations

import numpy as np

from mappings.validity import agreement, spearman


def test_spearman_and_the_interval():
    x = np.arange(30.0)
    assert spearman(x, x) == 1.0 and spearman(x, -x) == -1.0
    assert spearman(np.array([1.0, 1, 2, 2]), np.array([1.0, 2, 3, 4])) > 0.8  # ties
    a = agreement(x, x + np.sin(x) * 3)
    assert a.n == 30 and a.lo is not None and a.lo <= a.rho <= a.hi
    assert agreement(x[:13], x[:13]).rho is None  # fewer than 14 paired days
