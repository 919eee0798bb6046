"""Where Apple data reached us twice: an `export.zip` import and the phone's pushes.

Whole days, one path. For each metric and local day that both paths describe, the export
wins when it also holds a later day of that metric (so this day was over when the export
was made, and the export has every raw sample of it); on the export's last day, made while
the day went on, the pushes win (they kept coming after it). Days only one path describes
keep that path. Nothing depends on the order the two arrived in.
"""

from __future__ import annotations

import numpy as np

EXPORT = "apple_health"
PUSH = "apple_push"


def keep_mask(metric: np.ndarray, source: np.ndarray, local_day: np.ndarray) -> np.ndarray:
    """Which rows to keep (bool per row); rows of other sources are always kept."""
    keep = np.ones(len(metric), dtype=bool)
    is_push = source == PUSH
    is_export = source == EXPORT
    if not is_push.any() or not is_export.any():
        return keep
    for name in np.unique(metric[is_push]):
        export = is_export & (metric == name)
        if not export.any():
            continue
        push = is_push & (metric == name)
        export_days = np.unique(local_day[export])
        shared = np.intersect1d(export_days, np.unique(local_day[push]))
        if not len(shared):
            continue
        last = export_days.max()
        keep &= ~(push & np.isin(local_day, shared[shared < last]))
        keep &= ~(export & np.isin(local_day, shared[shared >= last]))
    return keep
