"""Event classifier benchmark: accuracy and macro-F1 per layer combination, a confusion
matrix, and batch throughput, on the labelled evaluation set (never used for training).

    .venv/bin/python benchmarks/classifier.py [--eval FILE] [--repeat N]

Layer combinations: rules only; model only; rules + model (what ships, no LLM);
rules + model + an LLM mocked as perfect (it answers every title the layers above leave
open with the true label: the ceiling an LLM could reach); rules + perfect LLM without the
model. UNCLASSIFIED counts as wrong. `--cv` adds the model's 5-fold cross-validated
accuracy on the training set (a figure that does not depend on the evaluation set).
Throughput is measured against the rules-only pass of the same run (the machine is noisy).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sklearn.metrics import f1_score

from mappings.actions import UNCLASSIFIED
from mappings.classifier import LABELS, Classification, EventInfo, KeywordClassifier
from mappings.classifier_layers import LayeredClassifier
from mappings.classifier_model import bundled_training_set, load, read_labelled, train

EVAL = Path(__file__).parent / "data" / "classifier_eval.tsv"
ORDER = sorted(LABELS)


class PerfectLLM:
    """Answers with the gold label: the best any LLM layer could do."""

    def __init__(self, gold: dict[str, str]) -> None:
        self.gold = gold
        self.asked = 0

    def ask(self, event: EventInfo) -> Classification | None:
        self.asked += 1
        return Classification(self.gold[event.title], 1.0, "llm")


def score(gold: Sequence[str], pred: Sequence[str]) -> tuple[float, float, float]:
    """Accuracy, macro-F1 over the 11 labels, and coverage (share not UNCLASSIFIED)."""
    acc = sum(g == p for g, p in zip(gold, pred, strict=True)) / len(gold)
    f1 = f1_score(gold, pred, labels=ORDER, average="macro", zero_division=0)
    cov = sum(p != UNCLASSIFIED for p in pred) / len(pred)
    return acc, float(f1), cov


def confusion(gold: Sequence[str], pred: Sequence[str]) -> str:
    cols = [*ORDER, UNCLASSIFIED]
    short = {c: c.replace("_", "")[:5] for c in cols}
    lines = [f"{'true/predicted':<16}" + "".join(f"{short[c]:>6}" for c in cols)]
    for g in ORDER:
        row = [sum(1 for a, b in zip(gold, pred, strict=True) if a == g and b == c) for c in cols]
        lines.append(f"{g:<16}" + "".join(f"{n or '.':>6}" for n in row))
    return "\n".join(lines)


def throughput(fn: Callable[[list[str]], object], titles: list[str], rounds: int = 3) -> float:
    """Best of a few rounds, titles per second."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn(titles)
        best = min(best, time.perf_counter() - start)
    return len(titles) / best


def cross_validate() -> float:
    """Mean accuracy of the model trained on 4/5 of the training set, tested on the rest."""
    from sklearn.model_selection import StratifiedKFold

    pairs = read_labelled(bundled_training_set())
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    labels = [g for _, g in pairs]
    right = 0
    for fit_idx, test_idx in folds.split(pairs, labels):
        model = train([pairs[i] for i in fit_idx])
        guesses = model.predict([pairs[i][0] for i in test_idx])
        right += sum(g == pairs[i][1] for (g, _), i in zip(guesses, test_idx, strict=True))
    return right / len(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, default=EVAL)
    parser.add_argument("--repeat", type=int, default=100, help="eval set copies per batch")
    parser.add_argument("--cv", action="store_true", help="cross-validate on the training set")
    args = parser.parse_args()
    if args.cv:
        print(f"model, 5-fold cross-validation on the training set: {cross_validate():.3f}\n")

    pairs = read_labelled(args.eval)
    titles = [t for t, _ in pairs]
    gold = [g for _, g in pairs]
    rules, model = KeywordClassifier(), load()
    gold_of = dict(pairs)
    perfect = PerfectLLM(gold_of)
    combos = {
        "rules only": LayeredClassifier(rules=rules),
        "model only": LayeredClassifier(model=model),
        "rules + model (shipped)": LayeredClassifier(rules=rules, model=model),
        "rules + model + perfect LLM": LayeredClassifier(rules=rules, model=model, llm=perfect),
        "rules + perfect LLM, no model": LayeredClassifier(rules=rules, llm=PerfectLLM(gold_of)),
    }
    print(f"evaluation set: {args.eval} ({len(pairs)} titles, {len(set(gold))} labels)")
    print(f"model: {json.dumps(model.meta, sort_keys=True)}\n")
    print(f"{'layers':<30}{'accuracy':>10}{'macro-F1':>10}{'coverage':>10}")
    preds = {}
    for name, clf in combos.items():
        preds[name] = [r.action for r in clf.classify_many(titles)]
        acc, f1, cov = score(gold, preds[name])
        print(f"{name:<30}{acc:>10.3f}{f1:>10.3f}{cov:>10.3f}")
    print(f"(the perfect LLM was asked about {perfect.asked} titles)")

    shipped = combos["rules + model (shipped)"]
    layers: dict[str, int] = {}
    for r in shipped.classify_many(titles):
        layers[r.layer] = layers.get(r.layer, 0) + 1
    print(f"\nanswers by layer (rules + model): {layers}")
    print("\nconfusion matrix, rules + model (rows: true label):")
    print(confusion(gold, preds["rules + model (shipped)"]))

    batch = titles * args.repeat

    def as_json_lines(ts: list[str]) -> list[str]:
        return [
            json.dumps(
                {"title": t, "action": r.action, "confidence": r.confidence, "layer": r.layer},
                ensure_ascii=False,
            )
            for t, r in zip(ts, shipped.classify_many(ts), strict=True)
        ]

    base = throughput(lambda ts: [rules.classify(t) for t in ts], batch)
    full = throughput(shipped.classify_many, batch)
    lines = throughput(as_json_lines, batch)
    print(f"\nthroughput, batch of {len(batch)} titles (best of 3):")
    print(f"  baseline, rules only        {base:>10,.0f} titles/s")
    print(f"  rules + model               {full:>10,.0f} titles/s  ({full / base:.2f}x baseline)")
    print(f"  rules + model + JSON lines  {lines:>10,.0f} titles/s  ({lines / base:.2f}x baseline)")


if __name__ == "__main__":
    main()
