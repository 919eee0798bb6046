"""A per-person correction of the P(accept) a runner states, learnt from that person's own
answers to what it stated before (issue 39).

The bundled runner integrates a person's readiness to say yes over a grid of offsets, so a
person who turns against the suggestions is followed only so far. This follows them the
rest of the way without touching any choice: logit' = logit(p) + b, with b ~ N(0, SD^2)
fitted (Laplace, MAP; older answers weigh less) on the person's answered items against the
P(accept) the runner
stated *when it recommended each one* (`base.STATED`), never against what its current posterior
says of them: that posterior has already read those answers, and fitting to it would count
each answer twice. Items without a stated P (older rows, the simulator's histories) are
left out, so a person with none gets the runner's own P exactly.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bridge.runner.base import STATED
from bridge.runner.features import RESPONSE_VALUE
from bridge.runner.online import laplace

# The correction's prior sd (logit) and the half-life (in answers) of an answer's weight in
# it: people drift, and the runner's own offset grid already holds the long-run rate. Both
# chosen on the HeartSteps replay, leave one person out, from sd 0.25/0.5/1/2 x half-life
# 50/none x with or without a slope (docs/lab/model.md): the same for every held-out person.
SD = 0.5
HALF_LIFE = 50.0
CLIP = 1e-6


def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, CLIP, 1.0 - CLIP)
    return np.log(q) - np.log1p(-q)


def stated_answers(history: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """(stated P, answer) of every answered item that carries a finite stated P."""
    pairs = []
    for h in history:
        p, response = h.get(STATED), h.get("response")
        if response not in RESPONSE_VALUE or not isinstance(p, int | float):
            continue
        if math.isfinite(p):
            pairs.append((float(p), RESPONSE_VALUE[response]))
    if not pairs:
        return np.zeros(0), np.zeros(0)
    stated, answers = np.array(pairs).T
    return stated, answers


def shift(history: list[dict[str, Any]], sd: float = SD, half_life: float = HALF_LIFE) -> float:
    """The person's logit correction b (its posterior mode); 0 with nothing to fit."""
    stated, answers = stated_answers(history)
    n = len(stated)
    if not n or sd <= 0:
        return 0.0
    weight = 0.5 ** (np.arange(n - 1, -1, -1) / half_life) if half_life > 0 else np.ones(n)
    fit = laplace(
        np.zeros(1), np.eye(1) * sd**2, (np.ones((n, 1)), answers, _logit(stated), weight)
    )
    b = float(fit.mean[0])
    return b if math.isfinite(b) else 0.0


def recalibrated(p: np.ndarray, history: list[dict[str, Any]], sd: float = SD) -> np.ndarray:
    """`p` (P(accept) per action, as the runner states it now) corrected for the person."""
    b = shift(history, sd)
    if b == 0.0:
        return np.asarray(p, dtype=np.float64)
    return 1.0 / (1.0 + np.exp(-(_logit(np.asarray(p, dtype=np.float64)) + b)))
