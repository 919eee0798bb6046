"""Leave one source out on the real-calendar development set: how the learned layer's
settings do on a calendar it has never seen.

    .venv/bin/python benchmarks/classifier_loso.py [--char 2-4 2-5 ...] [--c 1.0 0.5 ...]

For every setting (char n-gram range x SVM C) two figures, both through the whole stack
(rules + model + context, no LLM; UNCLASSIFIED and NOT_AN_ACTION both "no action"):
- `dev`: the model trained on the shipped training set only, scored on all of dev (what
  `benchmarks/classifier_real.py --set dev` prints for the shipped settings);
- `loso`: per development source, the model trained on the shipped set plus the other
  sources' development titles, scored on that source; summed over sources. A setting that
  only memorises a calendar's wording gains on `dev` and not here.
Plus the model file's size and load time. The evaluation set is never read.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.classifier_real import DATA, Labelled, no_action, read_set
from mappings.classifier import KeywordClassifier
from mappings.classifier_layers import LayeredClassifier
from mappings.classifier_model import (
    CHAR_RANGE,
    SVM_C,
    LearnedModel,
    bundled_training_set,
    load,
    read_labelled,
    save,
    train,
)


def right(model: LearnedModel, rules: KeywordClassifier, items: list[Labelled]) -> int:
    clf = LayeredClassifier(rules=rules, model=model)
    answers = clf.classify_many([x.event for x in items])
    return sum(no_action(a.action) == x.label for a, x in zip(answers, items, strict=True))


def loso(
    base: list[tuple[str, str]],
    dev: list[Labelled],
    rules: KeywordClassifier,
    char_range: tuple[int, int],
    c: float,
) -> int:
    by_source: dict[str, list[Labelled]] = defaultdict(list)
    for x in dev:
        by_source[x.source].append(x)
    total = 0
    for source, held in sorted(by_source.items()):
        others = [(x.event.title, x.label) for x in dev if x.source != source]
        model = train(base + others, char_range=char_range, c=c)
        total += right(model, rules, held)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    lo, hi = CHAR_RANGE
    parser.add_argument("--char", nargs="+", default=[f"{lo}-{hi}"], help="n-gram ranges")
    parser.add_argument("--c", nargs="+", type=float, default=[SVM_C], help="SVM C values")
    args = parser.parse_args()

    base = read_labelled(bundled_training_set())
    dev = read_set(DATA / "dev.tsv")
    rules = KeywordClassifier()
    n = len(dev)
    print(f"dev: {n} titles from {len({x.source for x in dev})} sources; training: {len(base)}")
    print(f"{'char':>5} {'C':>5} {'dev':>13} {'loso':>13} {'file KB':>8} {'load ms':>8}")
    for spec in args.char:
        a, b = (int(v) for v in spec.split("-"))
        for c in args.c:
            model = train(base, char_range=(a, b), c=c)
            with tempfile.TemporaryDirectory() as tmp:
                path = save(model, Path(tmp) / "m.npz")
                size = path.stat().st_size / 1024
                start = time.perf_counter()
                load(path)
                load_ms = (time.perf_counter() - start) * 1000
            d = right(model, rules, dev)
            lo_right = loso(base, dev, rules, (a, b), c)
            print(
                f"{spec:>5} {c:>5g} {d / n:.3f} ({d:>3}) {lo_right / n:.3f} ({lo_right:>3}) "
                f"{size:>8.0f} {load_ms:>8.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
