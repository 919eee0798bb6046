"""RMSSD from beat-to-beat (RR) intervals, shared by the readers that see raw beats."""

from __future__ import annotations

import itertools
import math

MIN_INTERVALS = 10
# Successive intervals differing by more than this share are artifacts (a missed or an
# extra beat), not variability; the usual filter in HRV software.
MAX_CHANGE = 0.2


def rmssd_ms(rr_seconds: list[float]) -> float | None:
    """RMSSD in ms over plausible RR intervals (0.25–2.5 s), None if too few remain."""
    rr = [x for x in rr_seconds if 0.25 <= x <= 2.5]
    squares = [(b - a) ** 2 for a, b in itertools.pairwise(rr) if abs(b - a) <= MAX_CHANGE * a]
    if len(squares) < MIN_INTERVALS:
        return None
    return round(math.sqrt(sum(squares) / len(squares)) * 1000, 2)
