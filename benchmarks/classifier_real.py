"""The classifier on real calendar titles in seven languages (no LLM): accuracy overall, per
language and per action, and how often it abstains.

    .venv/bin/python benchmarks/classifier_real.py [--set eval|dev] [--errors] [--title-only]
        [--source NAME ...]

The sets are read from ../shared/fixtures/real_calendars (its SOURCES.md: where each
title comes from); benchmarks/data/real_calendars/RUBRIC.md says how they were labelled.
`eval` is the held-out evaluation set; tune against `dev` only (`--errors` lists its
mistakes). Scoring counts UNCLASSIFIED and NOT_AN_ACTION as the same answer, "no action",
as the person sees no suggestion either way.
`--title-only` hides every feature but the title, to show what the features add.
`--source` scores only the named sources (the `source` column), e.g. one round's new ones.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mappings.actions import NOT_AN_ACTION, UNCLASSIFIED
from mappings.classifier import EventInfo
from mappings.classifier_layers import default_classifier
from tests.shared import SHARED_FIXTURES, missing_reason

# Real titles from other projects' calendars: read from ../shared/, never committed here.
DATA = SHARED_FIXTURES / "real_calendars"
LANGS = ("en", "de", "fr", "es", "nl", "it", "pt")


@dataclass(frozen=True)
class Labelled:
    lang: str
    label: str
    event: EventInfo
    source: str


def read_set(path: Path) -> list[Labelled]:
    """Rows of a real-calendar TSV (comment lines, one header row, then data)."""
    lines = [x for x in path.read_text(encoding="utf-8").splitlines() if not x.startswith("#")]
    header, *rows = lines
    cols = header.split("\t")
    out = []
    for n, line in enumerate(rows, 2):
        f = dict(zip(cols, line.split("\t"), strict=True))
        if not f["title"] or not f["label"]:
            raise SystemExit(f"{path}:{n}: empty title or label")
        event = EventInfo(
            title=f["title"],
            all_day=f["all_day"] == "1",
            duration_min=float(f["duration_min"]) if f["duration_min"] else None,
            attendee_count=int(f["attendees"] or 0),
            recurring=f["recurring"] == "1",
            transparency=f["transparency"] or "opaque",
            start_hour=int(f["start_hour"]) if f["start_hour"] else None,
            calendar_kind=f["calendar_kind"],
        )
        out.append(Labelled(f["lang"], f["label"], event, f["source"]))
    return out


def no_action(label: str) -> str:
    return NOT_AN_ACTION if label == UNCLASSIFIED else label


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("eval", "dev"), default="eval")
    parser.add_argument("--errors", action="store_true", help="list the wrong answers")
    parser.add_argument("--title-only", action="store_true", help="ignore all but the title")
    parser.add_argument("--source", nargs="+", help="score only these sources")
    args = parser.parse_args()
    if not DATA.is_dir():
        raise SystemExit(f"classifier_real: {missing_reason(DATA)}")

    items = read_set(DATA / f"{args.set}.tsv")
    if args.source:
        unknown = set(args.source) - {x.source for x in items}
        if unknown:
            names = ", ".join(sorted(unknown))
            parser.error(f"--source: no such source in {args.set}.tsv: {names}")
        items = [x for x in items if x.source in args.source]
    events = [EventInfo(title=x.event.title) if args.title_only else x.event for x in items]
    clf = default_classifier()
    start = time.perf_counter()
    answers = clf.classify_many(events)
    took = time.perf_counter() - start
    preds = [a.action for a in answers]
    right = [no_action(p) == x.label for p, x in zip(preds, items, strict=True)]

    n = len(items)
    print(f"set: {args.set} ({n} titles){' — title only' if args.title_only else ''}")
    print(f"accuracy (UNCLASSIFIED = no action): {sum(right) / n:.3f}  ({sum(right)}/{n})")
    unc = [p == UNCLASSIFIED for p in preds]
    clear = [x.label != NOT_AN_ACTION for x in items]
    n_clear = sum(clear)
    unc_clear = sum(u and c for u, c in zip(unc, clear, strict=True))
    print(
        f"UNCLASSIFIED: {sum(unc) / n:.1%} of all titles ({sum(unc)}/{n}); "
        f"{unc_clear / n_clear:.1%} of titles with a clear action ({unc_clear}/{n_clear})"
    )

    by_lang: dict[str, list[bool]] = defaultdict(list)
    by_label: dict[str, list[bool]] = defaultdict(list)
    for ok, x in zip(right, items, strict=True):
        by_lang[x.lang].append(ok)
        by_label[x.label].append(ok)
    print("\nper language:")
    for lang in LANGS:
        oks = by_lang.get(lang, [])
        if oks:
            print(f"  {lang}  {sum(oks) / len(oks):.3f}  ({sum(oks)}/{len(oks)})")
    print("\nper action (share of that label's titles answered right):")
    for label in sorted(by_label):
        oks = by_label[label]
        print(f"  {label:<14} {sum(oks) / len(oks):.3f}  ({sum(oks)}/{len(oks)})")
    layers = Counter(a.layer for a in answers)
    print(f"\nanswers by layer: {dict(sorted(layers.items()))}")
    print(f"time: {n / took:,.0f} titles/s for this batch (see benchmarks/classifier.py)")
    if args.errors:
        print("\nwrong answers (gold <- predicted [layer: rule]):")
        for p, a, x, ok in zip(preds, answers, items, right, strict=True):
            if not ok:
                print(f"  {x.lang} {x.label:<13} <- {p:<13} [{a.layer}: {a.rule}] {x.event.title}")


if __name__ == "__main__":
    main()
