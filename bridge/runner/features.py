"""Features shared by the bundled model's training and its inference.

Both of its learned parts are bilinear in a context vector (slot, meters) and a profile
vector g(S, M, W), so one history item's likelihood can be evaluated for every candidate
profile at once with two small matrix products.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mappings.actions import METERS

N_CTX = 17  # 1, slot one-hot (4), meters (5), how far each meter is below 0.4 (5),
# how booked the slot is, whether the calendar already has this action in it
N_CTX_V1 = 15  # models trained before the calendar features (read with those weights 0)
N_DCTX = 5  # 1, slot one-hot (4)
N_PROF = 7  # 1, S, M, W, S^2, M^2, W^2
LOW = 0.4
FREE_SCALE = 240.0  # minutes: a slot with a free stretch this long counts as not booked
RESPONSE_VALUE = {"accepted": 1.0, "ignored": 0.0, "rescheduled": 0.0}


def meters_of(doc: dict[str, Any]) -> np.ndarray:
    """The five meters of an observation or history item; unknown ones count as 0.5."""
    return np.array([0.5 if doc.get(m) is None else float(doc[m]) for m in METERS])


def booked(free_minutes: float | None) -> float:
    """0 for a free slot (or no calendar), up to 1 when no free minute is left."""
    if free_minutes is None:
        return 0.0
    return max(0.0, 1.0 - float(free_minutes) / FREE_SCALE)


def context(
    slot: int, meters: np.ndarray, busy: float = 0.0, scheduled: bool = False
) -> np.ndarray:
    x = np.zeros(N_CTX)
    x[0] = 1.0
    x[1 + slot % 4] = 1.0
    x[5:10] = meters
    x[10:15] = np.maximum(0.0, LOW - meters)
    x[15] = busy
    x[16] = 1.0 if scheduled else 0.0
    return x


def item_context(item: dict[str, Any]) -> np.ndarray:
    """The context of one history item: its slot, meters and (if known) its calendar."""
    return context(
        int(item["slot"]),
        meters_of(item.get("meters") or {}),
        booked(item.get("free_minutes")),
        item.get("active_event") is not None and item.get("active_event") == item.get("action"),
    )


def delta_context(slot: int) -> np.ndarray:
    x = np.zeros(N_DCTX)
    x[0] = 1.0
    x[1 + slot % 4] = 1.0
    return x


def profile_features(profiles: np.ndarray) -> np.ndarray:
    """g(S, M, W) for an (n, 3) array of profiles -> (n, N_PROF)."""
    p = np.atleast_2d(profiles)
    return np.hstack([np.ones((len(p), 1)), p, p**2])


def bilinear(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Row-wise outer product flattened: the regression design for bilinear weights."""
    return (x[:, :, None] * g[:, None, :]).reshape(len(x), -1)
