"""The meters against how real people said they felt: PMData (16 people, 5 months).

    .venv/bin/python benchmarks/real_people.py [--people p01,p02] [--k-weeks 2]

Reads `../shared/datasets/pmdata/` (or `$RB_SHARED_DIR/datasets/pmdata`; never
committed here) and skips with one line when it is absent. Each person goes through the
real pipeline, in a fresh store of their own: `import fitbit` of their `fitbit/` folder,
`import checkins` of their morning self-report (`pmsys/wellness.csv` converted to the
check-in CSV in a temporary folder), the meter history (every slot of the five months,
stored), then the validity pairing (each check-in's meters as of the moment it was said).

Prints, per self-report item, the median over people (with >= 14 paired days) of the
within-person Spearman rho of each meter, each single input and Fitbit's sleep score; the
share of stored slots where a meter sits at exactly 0 or 1; the forward-in-time rho of
weights fitted per person (fit on every paired day before, refit every week, first fit
after `--k-weeks` weeks, scored on the rest) beside the bundled weights on the same days;
the same inputs' best weights per person fitted and scored on the same days (an optimistic
ceiling for any weights); and the import + meters wall time per person. Figures only, no assertions.

PMData's scales: readiness 0-10, the others 1-5 with 5 the good end (fatigue 5 = fresh,
stress 5 = relaxed, soreness 5 = not sore: all rise with readiness in the data). Our
fatigue, stress and soreness items run the other way (5 = very tired / stressed / sore),
so the conversion writes 6 - x for them; every item then speaks to its meter as declared
in mappings/checkins.py.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PMDATA = Path(os.environ.get("RB_SHARED_DIR") or ROOT.parent / "shared") / "datasets" / "pmdata"
TZ = "Europe/Oslo"  # the study ran in Norway
NOW = datetime(2020, 4, 2, tzinfo=UTC)  # after the last day of the study
# PMData column -> (our item, scale min, scale max, flipped)
ITEMS = {
    "readiness": ("readiness", 0, 10, False),
    "fatigue": ("fatigue", 1, 5, True),
    "sleep_quality": ("sleep_quality", 1, 5, False),
    "mood": ("mood", 1, 5, False),
    "stress": ("stress", 1, 5, True),
    "soreness": ("soreness", 1, 5, True),
}


def convert_wellness(src: Path, dst: Path) -> int:
    """PMData's wellness.csv as a check-in CSV (timestamp,item,value,scale_min,scale_max)."""
    n = 0
    with src.open(newline="") as f, dst.open("w", newline="") as out:
        w = csv.writer(out)
        w.writerow(["timestamp", "item", "value", "scale_min", "scale_max"])
        for row in csv.DictReader(f):
            for column, (item, lo, hi, flip) in ITEMS.items():
                raw = (row.get(column) or "").strip()
                if not raw:
                    continue
                try:
                    value = float(raw)
                except ValueError:
                    w.writerow([row["effective_time_frame"], item, raw, lo, hi])  # counted bad
                    continue
                w.writerow(
                    [row["effective_time_frame"], item, lo + hi - value if flip else value, lo, hi]
                )
                n += 1
    return n


def person(folder: Path, tmp: Path) -> dict:
    from sqlalchemy import select

    from bridge.config import Settings
    from bridge.cycle.meters import recompute_meters
    from bridge.cycle.validity import paired_history
    from bridge.intake.checkins import import_checkins
    from bridge.intake.ingest import import_file
    from bridge.store import Store
    from bridge.store.models import MeterSnapshot
    from connectors.base import ReadContext
    from mappings.actions import METERS

    settings = Settings.model_validate({"timezone": TZ, "data_dir": str(tmp / "data")})
    store = Store(settings.database_url)
    checkins = tmp / "checkins.csv"
    convert_wellness(folder / "pmsys" / "wellness.csv", checkins)
    started = time.perf_counter()
    imported = import_file(store, "fitbit", folder / "fitbit", ReadContext(settings.tz, NOW))
    said = import_checkins(store, checkins, settings.tz, settings.boundaries)
    slots = recompute_meters(store, settings, NOW)
    seconds = time.perf_counter() - started
    paired = paired_history(store, settings)
    with store.session() as session:
        rows = session.execute(
            select(*(getattr(MeterSnapshot, m) for m in METERS))  # type: ignore[call-overload]
        ).all()
    values = np.array([[np.nan if v is None else v for v in r] for r in rows], dtype=float)
    store.dispose()
    return {
        "seconds": seconds,
        "records": imported.records,
        "checkins": said.new,
        "slots": slots,
        "paired": paired,
        "stored": values.reshape(-1, len(METERS)),
    }


def median(values: list[float]) -> str:
    return f"{statistics.median(values):+.2f} ({len(values)})" if values else "  —  "


def best_in_sample(scores: np.ndarray, said: np.ndarray) -> float:
    """Spearman rho of the least-squares composite of `scores` fitted to `said` on the same
    days (a missing input stands at its mean): about what the best weights could reach,
    optimistic as every in-sample fit is."""
    from mappings.validity import spearman

    ok = ~np.isnan(said)
    x, y = scores[ok], said[ok]
    x = x[:, ~np.isnan(x).all(axis=0)]
    if len(y) < 3 or not x.shape[1]:
        return float("nan")
    x = np.where(np.isnan(x), np.nanmean(x, axis=0), x)
    design = np.column_stack([x, np.ones(len(y))])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return spearman(design @ coef, y)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--people", help="comma-separated, e.g. p01,p05 (default: all)")
    parser.add_argument("--k-weeks", type=int, default=2, help="weeks before the first fit")
    args = parser.parse_args()
    if not PMDATA.is_dir():
        print(f"skipped: {PMDATA} is absent (real people's data is never committed here)")
        return
    from connectors.registry import IMPORT_KINDS

    if "fitbit" not in IMPORT_KINDS:
        print("skipped: this tree has no `import fitbit` (issue 38's Fitbit importer)")
        return
    from mappings import validity
    from mappings.actions import METERS
    from mappings.checkins import BY_NAME
    from mappings.validity import MIN_DAYS, forward_fit, spearman

    validity.FIT_FIRST_DAYS = args.k_weeks * 7
    names = (
        args.people.split(",")
        if args.people
        else sorted(p.name for p in PMDATA.iterdir() if p.is_dir())
    )
    rho: dict[tuple[str, str], list[float]] = defaultdict(list)
    fitted: dict[tuple[str, str], list[float]] = defaultdict(list)
    bundled_same: dict[tuple[str, str], list[float]] = defaultdict(list)
    kept_bundled: dict[str, int] = defaultdict(int)
    ceiling: dict[tuple[str, str], list[float]] = defaultdict(list)
    pinned, total = np.zeros(len(METERS)), np.zeros(len(METERS))
    timings = []
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            res = person(PMDATA / name, Path(tmp))
        p = res["paired"]
        stored = res["stored"]
        known = ~np.isnan(stored)
        pinned += ((stored == 0) | (stored == 1)).sum(axis=0)
        total += known.sum(axis=0)
        timings.append(res["seconds"])
        print(
            f"{name}: {res['records']} records, {res['checkins']} check-ins, {res['slots']} "
            f"slots, {len(p.keys)} check-in mornings, {res['seconds']:.1f} s",
            flush=True,
        )
        for item, said in p.items.items():
            columns = {
                **{f"meter {m}": p.meters[m] for m in METERS},
                **{f"input {k}": v for k, v in p.inputs.items()},
                **{f"vendor {k}": v for k, v in p.vendors.items()},
            }
            for label, x in columns.items():
                ok = ~(np.isnan(x) | np.isnan(said))
                if ok.sum() >= MIN_DAYS:
                    r = spearman(x, said)
                    if r == r:
                        rho[(item, label)].append(r)
            meter = BY_NAME[item].meter
            table = {k: w for k, w in p.weights.meters[meter].items() if w > 0 and k in p.inputs}
            if not table:
                continue
            order = sorted(table)
            scores = np.column_stack([p.inputs[k] for k in order])
            ceiling[(item, meter)].append(best_in_sample(scores, said))
            fit = forward_fit(scores, said, np.array([table[k] for k in order]))
            if fit is None or fit.forward_fitted is None or fit.forward_bundled is None:
                continue
            fitted[(item, meter)].append(fit.forward_fitted)
            bundled_same[(item, meter)].append(fit.forward_bundled)
            # What the person would run on: fitted only where the forward check favours it.
            kept_bundled[item] += not fit.better
    order = [v[0] for v in ITEMS.values()]
    items = sorted({i for i, _ in rho}, key=order.index)
    labels = sorted({label for _, label in rho}, key=lambda s: (s.split()[0] != "meter", s))
    print("\nMedian within-person Spearman rho (people with >= 14 paired days):")
    print(f"{'':28}" + "".join(f"{i:>16}" for i in items))
    for label in labels:
        print(f"{label:28}" + "".join(f"{median(rho.get((i, label), [])):>16}" for i in items))
    print(
        f"\nWeights fitted per person, forward in time (first fit after {args.k_weeks} weeks, "
        "refit weekly, scored on the rest), median rho:"
    )
    for (item, meter), values in sorted(fitted.items()):
        print(
            f"  {meter} vs {item}: fitted {median(values)}, bundled on the same days "
            f"{median(bundled_same[(item, meter)])}; fit kept out for {kept_bundled[item]} "
            "people (forward check favoured the bundled weights)"
        )
    print(
        "\nCeiling: each person's best linear weights of the same inputs, fitted on all of "
        "their days and scored on the same days (an optimistic ceiling for any weights):"
    )
    for (item, meter), values in sorted(ceiling.items()):
        print(f"  {meter} vs {item}: {median(values)}")
    print("\nShare of stored slots with a meter at exactly 0 or 1:")
    for i, m in enumerate(METERS):
        share = pinned[i] / total[i] if total[i] else float("nan")
        print(f"  {m:10} {share:6.1%} of {int(total[i])} slots with a value")
    print(
        f"\nImport + meters per person: median {statistics.median(timings):.1f} s, "
        f"max {max(timings):.1f} s (measured while other work ran on the machine)"
    )


if __name__ == "__main__":
    main()
