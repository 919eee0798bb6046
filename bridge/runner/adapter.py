"""The per-user adapter of the bundled model (Phase 3), refitted weekly from the
person's stored answers.

The bundled model's weights never change. The adapter is a JSON file next to the
database holding what the person's history taught so far, so the runner starts from it
instead of the population prior and needs only the answers since the last refit:
- a Gaussian prior over the profile [S, M, W] (the posterior from all stored answers,
  widened so that newer evidence can still move it);
- a per-action acceptance offset (a logit), fitted by a few Newton steps on the answers
  with a strong pull towards 0: what the profile does not explain ("never suggest BINGE
  to me").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from bridge.errors import InputError
from bridge.runner.features import RESPONSE_VALUE, item_context
from mappings.actions import ACTIONS

ADAPTER_VERSION = 1


WIDEN = 2.0  # the stored covariance is multiplied by this (people change)


BIAS_L2 = 4.0  # pull of each action offset towards 0, in answers' worth


@dataclass(frozen=True)
class Adapter:
    log_prior: np.ndarray  # over the model's profile grid
    action_bias: np.ndarray  # (10,) logit offsets
    through: date | None  # the last local date whose answers it already holds


def fit_adapter(history: list[dict[str, Any]], model: Any) -> dict[str, Any]:
    """The adapter document for this history (oldest first), as JSON-ready data."""
    full = np.exp(model.log_joint_experts(history)[:, :, 0])  # (experts, K)
    full /= full.sum()
    post = full.sum(0)
    mean = post @ model.grid
    cov = (model.grid * post[:, None]).T @ model.grid - np.outer(mean, mean)
    items = [
        h for h in history if h.get("action") in ACTIONS and h.get("response") in RESPONSE_VALUE
    ]
    bias = np.zeros(len(ACTIONS))
    if items:
        acts = np.array([ACTIONS.index(h["action"]) for h in items])
        y = np.array([RESPONSE_VALUE[h["response"]] for h in items])
        ctx = np.array([item_context(h) for h in items])
        z = model.accept_logits(acts, ctx).astype(np.float64)  # (experts, n, K)
        for _ in range(8):  # Newton on the offsets, expert and profile marginalised
            p = np.einsum("enk,ek->n", 1.0 / (1.0 + np.exp(-(z + bias[acts][:, None]))), full)
            grad = np.bincount(acts, p - y, len(ACTIONS)) + BIAS_L2 * bias
            hess = np.bincount(acts, p * (1 - p), len(ACTIONS)) + BIAS_L2
            bias -= grad / hess
    return {
        "adapter_version": ADAPTER_VERSION,
        "model_version": model.version,
        "answers": len(items),
        "belief_mean": [round(float(x), 4) for x in mean],
        "belief_cov": [[round(float(x), 6) for x in row] for row in cov],
        "action_bias": {a: round(float(b), 4) for a, b in zip(ACTIONS, bias, strict=True)},
    }


def load_adapter(source: str | Path | dict[str, Any], model: Any) -> Adapter:
    """An adapter from its JSON file (or document); InputError names what is unusable."""
    where = "adapter" if isinstance(source, dict) else str(source)
    try:
        doc = source if isinstance(source, dict) else json.loads(Path(source).read_text("utf-8"))
        mean = np.array(doc["belief_mean"], dtype=float)
        cov = np.array(doc["belief_cov"], dtype=float) * WIDEN + np.eye(3) * 1e-3
        bias = np.array([float(doc["action_bias"].get(a, 0.0)) for a in ACTIONS])
        through = date.fromisoformat(doc["through"]) if doc.get("through") else None
        inv = np.linalg.inv(cov)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, np.linalg.LinAlgError) as err:
        raise InputError(f"{where}: not a usable adapter ({err}); delete it to refit") from None
    d = model.grid - mean
    log_prior = model.log_prior - 0.5 * np.einsum("ki,ij,kj->k", d, inv, d)
    return Adapter(log_prior, bias, through)
