"""The validity report: how closely each meter, each of its inputs and each vendor score
follow what the person says in their check-ins (`rhythm-bridge validity`, the page).

Each check-in slot's meters are computed afresh as of the moment the first answer of that
slot was given, so a meter is only ever compared with a check-in it could not have seen
(data from after it, even within the slot, is left out). The statistics and the fitting
rules are in mappings/validity.py; docs/guides/validity.md explains them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from sqlalchemy import select
from sqlmodel import col

from bridge.config import Settings
from bridge.cycle.meters import (
    BASELINE_LOOKBACK_DAYS,
    CHUNK_DAYS,
    _task_frame,
    freshness_rules,
    load_frames,
    meter_weights,
    person_weights,
)
from bridge.store import Store
from bridge.store.models import CheckIn, Reading
from mappings.actions import METERS
from mappings.checkins import BY_NAME, items_of
from mappings.slots import SlotKey, slot_bounds
from mappings.validity import FIT_MIN_DAYS, MIN_DAYS, Agreement, agreement, forward_fit
from mappings.vocabulary import VENDOR_SCORES

if TYPE_CHECKING:
    from mappings.meters import Weights

# Vendors' own composites, compared with the check-ins beside the meters (never inputs
# of this comparison): the newest value ended before the check-in, at most a day and a
# half old.
VENDOR = {score.metric: score for score in VENDOR_SCORES}
VENDOR_MAX_AGE = timedelta(hours=36)
INPUT_NAMES = {
    "sleep_duration": "sleep duration",
    "sleep_efficiency": "sleep efficiency",
    "deep_sleep_share": "deep sleep",
    "rem_sleep_share": "REM sleep",
    "sleep_regularity": "sleep regularity",
    "resting_hr": "resting heart rate",
    "hrv": "HRV",
    "body_battery": "Body Battery",
}


@dataclass
class Paired:
    """One row per check-in slot, in time order: what the meters, their inputs and the
    vendor scores were as of the check-in, and what the person said (each item in its
    meter's direction: an inverse item is flipped, so agreement is a positive rho)."""

    keys: list[SlotKey]
    meters: dict[str, np.ndarray]
    inputs: dict[str, np.ndarray]
    vendors: dict[str, np.ndarray]
    items: dict[str, np.ndarray]
    weights: Weights


def _checkins(store: Store) -> pd.DataFrame:
    with store.session() as session:
        rows = session.execute(
            select(
                col(CheckIn.local_date),
                col(CheckIn.slot),
                col(CheckIn.item),
                col(CheckIn.score),
                col(CheckIn.at_utc),
            )
        ).all()
    return pd.DataFrame(
        list(map(tuple, rows)), columns=["local_date", "slot", "item", "score", "at_utc"]
    )


def _vendor_values(store: Store, lo: datetime, hi: datetime, cutoffs: list[datetime]) -> dict:
    with store.session() as session:
        rows = session.execute(
            select(
                col(Reading.metric), col(Reading.end_utc), col(Reading.value), col(Reading.label)
            ).where(
                col(Reading.metric).in_(sorted(VENDOR)),
                col(Reading.end_utc) >= lo,
                col(Reading.end_utc) < hi,
            )
        ).all()
    out: dict[str, np.ndarray] = {}
    if not rows:
        return out
    frame = pd.DataFrame(list(map(tuple, rows)), columns=["metric", "end", "value", "label"])
    # Only the labels that are the score itself (not a day's highest or lowest).
    frame = frame[
        [lab in VENDOR[m].labels for m, lab in zip(frame["metric"], frame["label"], strict=True)]
    ]
    frame["end"] = pd.to_datetime(frame["end"], utc=True)
    at = pd.DataFrame({"at": pd.to_datetime(cutoffs, utc=True), "i": range(len(cutoffs))})
    for metric, group in frame.drop(columns="label").groupby("metric"):
        merged = pd.merge_asof(
            at.sort_values("at"),
            group.dropna(subset=["value"]).sort_values("end"),
            left_on="at",
            right_on="end",
            direction="backward",
            tolerance=pd.Timedelta(VENDOR_MAX_AGE),
        ).sort_values("i")
        values = merged["value"].to_numpy(dtype=float)
        if not np.isnan(values).all():
            out[str(metric)] = values
    return out


def paired_history(store: Store, settings: Settings, weights: Weights | None = None) -> Paired:
    """The meters, inputs and vendor scores as of each check-in slot (see `Paired`)."""
    from mappings.meters import MeterRules, compute_slots

    weights = weights or person_weights(store, settings)
    said = _checkins(store)
    if said.empty:
        return Paired([], {}, {}, {}, {}, weights)
    slots = said.groupby(["local_date", "slot"])["at_utc"].min().sort_index()
    keys = [SlotKey(d, int(s)) for d, s in slots.index]
    cutoffs = [
        pd.Timestamp(t).tz_localize("UTC") if pd.Timestamp(t).tzinfo is None else pd.Timestamp(t)
        for t in slots.to_numpy()
    ]
    at = {k: t.to_pydatetime() for k, t in zip(keys, cutoffs, strict=True)}
    tz, bounds = settings.tz, settings.boundaries
    rules = MeterRules(bounds, weights, freshness_rules(settings))
    results = []
    # In chunks of a year, as the recompute reads them: memory stays bounded however long
    # the history of check-ins is.
    step = timedelta(days=CHUNK_DAYS)
    start = 0
    while start < len(keys):
        end = start
        while end < len(keys) and keys[end].local_date - keys[start].local_date < step:
            end += 1
        chunk = keys[start:end]
        lo = slot_bounds(chunk[0], tz, bounds)[0] - timedelta(days=BASELINE_LOOKBACK_DAYS)
        hi = slot_bounds(chunk[-1], tz, bounds)[1] + timedelta(days=1)
        readings, events = load_frames(store, lo, hi)
        results += compute_slots(
            readings,
            events,
            chunk,
            tz=tz,
            now={k: at[k] for k in chunk},
            rules=rules,
            tasks=_task_frame(store, lo, hi),
        )
        del readings, events
        start = end
    lo = slot_bounds(keys[0], tz, bounds)[0] - timedelta(days=BASELINE_LOOKBACK_DAYS)
    n = len(keys)
    meters = {m: np.full(n, np.nan) for m in METERS}
    inputs: dict[str, np.ndarray] = {}
    for i, res in enumerate(results):
        for m in METERS:
            mv = res.meters[m]
            if mv.value is not None:
                meters[m][i] = mv.value
            for item in mv.provenance.get("inputs", []):
                inputs.setdefault(item["name"], np.full(n, np.nan))[i] = item["score"]
    items: dict[str, np.ndarray] = {}
    row = {k: i for i, k in enumerate(keys)}
    for rec in said.itertuples(index=False):
        i = row[SlotKey(rec.local_date, int(rec.slot))]
        spec = BY_NAME.get(str(rec.item))
        if spec is None:
            continue
        items.setdefault(spec.name, np.full(n, np.nan))[i] = (
            1.0 - rec.score if spec.inverse else rec.score
        )
    vendors = _vendor_values(store, lo, hi, [c.to_pydatetime() for c in cutoffs])
    return Paired(keys, meters, inputs, vendors, items, weights)


def _name(name: str) -> str:
    return INPUT_NAMES.get(name, name.replace("_", " "))


def _sentence(meter: str, item: str, a: Agreement, singles: dict[str, Agreement]) -> str:
    said = f"your {item.replace('_', ' ')}" + (" (inverted)" if BY_NAME[item].inverse else "")
    if not a.enough:
        return (
            f"{meter.title()} vs {said}: {a.n} paired days so far; a number needs "
            f"{MIN_DAYS} (keep checking in)."
        )
    assert a.rho is not None
    how = "follows" if a.rho >= 0.3 else "loosely follows" if a.rho >= 0.1 else "does not follow"
    text = f"{meter.title()} {how} {said} (rho {a.rho:.2f}, {a.n} days)"
    best = max(
        ((k, v) for k, v in singles.items() if v.rho is not None),
        key=lambda kv: abs(kv[1].rho or 0.0),
        default=None,
    )
    if best is not None and best[1].rho is not None:
        closer = "more closely than" if a.rho > abs(best[1].rho) else "less closely than"
        text += f", {closer} {_name(best[0])} alone ({best[1].rho:.2f})"
    return text + "."


def report(p: Paired) -> dict[str, Any]:
    """Per meter and each check-in item it speaks to: the meter's, each of its inputs' and
    each vendor score's agreement, and a sentence (JSON-ready)."""
    out: dict[str, Any] = {
        "min_days": MIN_DAYS,
        "check_in_slots": len(p.keys),
        "mapping_version": p.weights.version,
        "meters": [],
    }
    for meter in METERS:
        table = {k: w for k, w in p.weights.meters[meter].items() if w > 0}
        entries = []
        for spec in items_of(meter):
            said = p.items.get(spec.name)
            if said is None:
                continue
            a = agreement(p.meters[meter], said)
            singles = {k: agreement(p.inputs[k], said) for k in sorted(table) if k in p.inputs}
            vendors = {k: agreement(v, said) for k, v in sorted(p.vendors.items())}
            entries.append(
                {
                    "item": spec.name,
                    "inverse": spec.inverse,
                    **a.as_dict(),
                    "inputs": {k: v.as_dict() for k, v in singles.items()},
                    "vendor_scores": {k: v.as_dict() for k, v in vendors.items()},
                    "sentence": _sentence(meter, spec.name, a, singles),
                }
            )
        if entries:
            which = "fitted to you" if meter in p.weights.fitted else "bundled"
            out["meters"].append({"meter": meter, "weights": which, "items": entries})
    return out


def fit_person(store: Store, settings: Settings, today: date) -> dict[str, Any]:
    """Fit this person's meter weights to their check-ins and keep them where a forward
    evaluation on their own history favours them (mappings/validity.forward_fit); store
    the result (or clear a fit that no longer helps) for `person_weights`.

    Each meter's target is the mean of its check-in items said in a slot (each in the
    meter's direction); its inputs are those with a weight in the configured (not a
    previously fitted) table and any evidence. A meter with fewer than FIT_MIN_DAYS paired
    days keeps the configured weights. Returns, per meter, what was decided and why.
    """
    import json

    from bridge.cycle.meters import FITTED_KEY

    paired = paired_history(store, settings, meter_weights(settings))
    kept: dict[str, dict[str, float]] = {}
    verdicts: dict[str, Any] = {}
    for meter in METERS:
        said = [paired.items[i.name] for i in items_of(meter) if i.name in paired.items]
        table = paired.weights.meters[meter]
        names = sorted(k for k, w in table.items() if w > 0 and k in paired.inputs)
        if not said or not names:
            continue
        with np.errstate(all="ignore"):
            target = np.nanmean(np.vstack(said), axis=0)
        prior = np.array([table[k] for k in names])
        scores = np.column_stack([paired.inputs[k] for k in names])
        fit = forward_fit(scores, target, prior)
        if fit is None:
            verdicts[meter] = {"used": False, "why": f"fewer than {FIT_MIN_DAYS} paired days"}
            continue
        verdicts[meter] = {
            "used": fit.better,
            "forward_rho_fitted": fit.forward_fitted,
            "forward_rho_bundled": fit.forward_bundled,
            "judged_days": fit.judged_days,
        }
        if fit.better:
            kept[meter] = {
                **table,
                **{k: round(float(w), 4) for k, w in zip(names, fit.weights, strict=True)},
            }
    with store.transaction() as session:
        doc = {"fitted_on": today.isoformat(), "meters": kept, "evaluation": verdicts}
        store.set_meta(session, FITTED_KEY, json.dumps(doc) if kept else "")
    return verdicts


REFIT_DAYS = 7
CHECKED_KEY = "fitted_weights_checked"


def recompute_with_refit(store: Store, settings: Settings, now: datetime, **kw: Any) -> int:
    """The cycle's meter step: the weekly weights check (`refit_if_due`), then
    `recompute_meters`, so the history is recomputed with the weights just decided."""
    from bridge.cycle.meters import recompute_meters

    refit_if_due(store, settings, now.astimezone(settings.tz).date())
    return recompute_meters(store, settings, now, **kw)


def refit_if_due(store: Store, settings: Settings, today: date) -> dict[str, Any] | None:
    """Fit (or drop) the person's weights once a week, so fitted weights are used only
    while the forward check on the newest history still favours them. Nothing (one count)
    until the person has FIT_MIN_DAYS check-in slots. Returns the verdicts when it ran."""
    from sqlalchemy import func

    checked = store.get_meta(CHECKED_KEY)
    if checked and (today - date.fromisoformat(checked)).days < REFIT_DAYS:
        return None
    with store.session() as session:
        slots = session.execute(
            select(func.count()).select_from(
                select(col(CheckIn.local_date), col(CheckIn.slot)).distinct().subquery()
            )
        ).scalar_one()
    if slots < FIT_MIN_DAYS:
        return None
    verdicts = fit_person(store, settings, today)
    with store.transaction() as session:
        store.set_meta(session, CHECKED_KEY, today.isoformat())
    return verdicts
