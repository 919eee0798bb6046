"""The classifier on real calendar titles (no LLM): accuracy overall, per language, per
source calendar and per action, how often it abstains, what the event's context adds, and
how much of a calendar's time is labelled right after the person answers the k best
questions.

    .venv/bin/python benchmarks/classifier_real.py [--set eval|dev|independent|extra]
        [--errors] [--title-only] [--source NAME ...]

The sets are read from ../shared/fixtures/real_calendars (its SOURCES.md: where each
title comes from); benchmarks/data/real_calendars/RUBRIC.md says how they were labelled.
`eval` is the held-out evaluation set; tune against `dev` only (`--errors` lists its
mistakes). Scoring counts UNCLASSIFIED and NOT_AN_ACTION as the same answer, "no action",
as the person sees no suggestion either way.
`--title-only` hides every feature but the title, to show what the features add.
`--source` scores only the named sources (the `source` column), e.g. one round's new ones.
`--set independent` reads `independent_titles.jsonl` (titles only, labelled by another
rubric; `NONE` is no action): measure on it, never pick keywords from it.
`--set extra` reads `../shared/fixtures/real_calendars_extra/extra.tsv` (same columns, plus
an optional `location`): calendars in the languages added for issue 42, labelled by the
rubric before the classifier was run on them, a held-out check never tuned to (its
SOURCES.md). Absent: one line, nothing else.

Tables (each with and without context, i.e. the event's shape besides its title):
- per language and per source: accuracy on every title, accuracy on titles that name an
  action, and abstention (UNCLASSIFIED) on those;
- "after k answers" per source with event times: the share of the source's timed
  event-minutes labelled right after the k best questions (mappings.classifier_questions)
  are answered with the gold label, k = 0, 3, 5, 10. The sets hold each distinct title of a
  calendar once with one occurrence's duration, not the calendar's full event stream, so
  a group is one row here and the curve is what answering does per title, not per series;
- the share of each layer's answers that are right, confident and unsure (what the
  question list's `DOUBT` is measured from, on the dev set);
- the time to list questions for a synthetic year of calendar (20 events a day).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mappings.actions import NOT_AN_ACTION, UNCLASSIFIED
from mappings.classifier import Classification, EventInfo
from mappings.classifier_layers import LayeredClassifier, default_classifier
from mappings.classifier_overrides import Correction, Overrides, group_key, title_pattern
from mappings.classifier_questions import SURE, Occurrence, questions
from tests.shared import SHARED_FIXTURES, missing_reason

# Real titles from other projects' calendars: read from ../shared/, never committed here.
DATA = SHARED_FIXTURES / "real_calendars"
EXTRA = SHARED_FIXTURES / "real_calendars_extra"
LANGS = ("en", "de", "fr", "es", "nl", "it", "pt")
# The languages issue 42 added, measured on the extra set.
NEW_LANGS = ("pl", "cs", "sv", "da", "no", "fi", "tr", "ja", "pt-br")
KS = (0, 3, 5, 10)


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
            location=f.get("location", ""),
        )
        out.append(Labelled(f["lang"], f["label"], event, f["source"]))
    return out


def read_independent(path: Path) -> list[Labelled]:
    """independent_titles.jsonl: {"title","label","lang","source"}; NONE is no action."""
    import json

    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not row.get("title") or not row.get("label"):
            raise SystemExit(f"{path}:{n}: empty title or label")
        label = NOT_AN_ACTION if row["label"] == "NONE" else row["label"]
        source = row["source"].split(":", 1)[0]
        out.append(Labelled(row["lang"], label, EventInfo(title=row["title"]), source))
    return out


@cache
def training_set() -> tuple[tuple[str, str], ...]:
    from mappings.classifier_model import bundled_training_set, read_labelled

    return tuple(read_labelled(bundled_training_set()))


def answered_classifier(
    clf: LayeredClassifier, answers: list[tuple[str, str]], retrain: bool = False
) -> LayeredClassifier:
    """The classifier after the person gave these (title, label) answers, and (`retrain`)
    the model was fitted again with them."""
    from mappings.classifier_model import train

    fixes = Overrides([Correction(title_pattern(t), label, t) for t, label in answers])
    model = train(training_set(), extra_weight=answers) if retrain else clf.model
    return LayeredClassifier(rules=clf.rules, model=model, overrides=fixes)


def no_action(label: str) -> str:
    return NOT_AN_ACTION if label == UNCLASSIFIED else label


def scores(items: list[Labelled], answers: list[Classification]) -> tuple[int, str, str, str]:
    """n, accuracy on all, accuracy on action titles, abstention on action titles."""
    n = len(items)
    ok = [no_action(a.action) == x.label for a, x in zip(answers, items, strict=True)]
    act = [i for i, x in enumerate(items) if x.label != NOT_AN_ACTION]
    acc = f"{sum(ok) / n:.2f}" if n else "-"
    if not act:
        return n, acc, "-", "-"
    acc_act = sum(ok[i] for i in act) / len(act)
    abst = sum(answers[i].action == UNCLASSIFIED for i in act) / len(act)
    return n, acc, f"{acc_act:.2f}", f"{abst:.0%}"


def table(
    title: str,
    key: str,
    items: list[Labelled],
    ctx: list[Classification],
    bare: list[Classification],
) -> None:
    """Per language or per source: with context | title only."""
    rows: dict[str, list[int]] = defaultdict(list)
    for i, x in enumerate(items):
        rows[getattr(x, key)].append(i)
    print(f"\n{title}: with context | title only")
    print(
        f"| {key} | titles | acc | acc (action titles) | abstains (action titles) "
        "| acc, title only | acc (action), title only | abstains, title only |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in sorted(rows, key=lambda k: (-len(rows[k]), k)):
        idx = rows[name]
        sub = [items[i] for i in idx]
        n, a, aa, ab = scores(sub, [ctx[i] for i in idx])
        _, b, ba, bb = scores(sub, [bare[i] for i in idx])
        print(f"| {name} | {n} | {a} | {aa} | {ab} | {b} | {ba} | {bb} |")


def after_answers(
    items: list[Labelled], answers: list[Classification], clf: LayeredClassifier
) -> None:
    """Share of timed event-minutes right after the k best questions, per source."""
    by_source: dict[str, list[int]] = defaultdict(list)
    for i, x in enumerate(items):
        if x.event.duration_min and not x.event.all_day:
            by_source[x.source].append(i)
    if not by_source:
        print("\nafter k answers: no source in this set has event times")
        return
    print("\nafter k answers: share of the source's timed event-minutes labelled right")
    print("| source | timed titles | minutes | " + " | ".join(f"k={k}" for k in KS) + " |")
    print("|---|---|---|" + "---|" * len(KS))
    totals = [0.0] * len(KS)
    all_minutes = 0.0
    for source in sorted(by_source):
        idx = by_source[source]
        occ = [
            Occurrence(
                items[i].event.title,
                items[i].event.duration_min or 0.0,
                answers[i].action,
                answers[i].confidence,
                answers[i].layer,
            )
            for i in idx
        ]
        minutes = sum(o.minutes for o in occ)
        titles = [x.event.title for x in items if x.source == source]
        pairs = zip(idx, occ, strict=True)
        given = {group_key(o.title): (o.title, items[i].label) for i, o in pairs}
        shares = []
        for j, k in enumerate(KS):
            asked = {q.key for q in questions(occ, k)}
            now = [o.action for o in occ]
            if asked:
                # As the daemon does: each answer labels its group, the calendar may come
                # to lean to an action (calendar_lean), and every event is labelled anew.
                after = answered_classifier(clf, [given[key] for key in sorted(asked)])
                lean = after.calendar_lean(titles)
                again = [replace(items[i].event, calendar_lean=lean) for i in idx]
                now = [a.action for a in after.classify_many(again)]
            right = sum(
                o.minutes
                for i, o, action in zip(idx, occ, now, strict=True)
                if (group_key(o.title) in asked or no_action(action) == items[i].label)
            )
            shares.append(right / minutes)
            totals[j] += right
        all_minutes += minutes
        cells = " | ".join(f"{x:.0%}" for x in shares)
        print(f"| {source} | {len(idx)} | {minutes:,.0f} | {cells} |")
    cells = " | ".join(f"{t / all_minutes:.0%}" for t in totals)
    print(f"| all | {sum(map(len, by_source.values()))} | {all_minutes:,.0f} | {cells} |")


def reliability(items: list[Labelled], answers: list[Classification]) -> None:
    """Share right per layer, confident (>= SURE) and unsure: what DOUBT is measured from."""
    cells: dict[tuple[str, bool], list[bool]] = defaultdict(list)
    for a, x in zip(answers, items, strict=True):
        if a.action != UNCLASSIFIED:
            cells[a.layer, a.confidence >= SURE].append(no_action(a.action) == x.label)
    print("\nshare right per layer (classifier_questions.DOUBT is 1 - this on the dev set):")
    print("| layer | confident: right | unsure: right |")
    print("|---|---|---|")
    for layer in sorted({layer for layer, _ in cells}):
        row = []
        for sure in (True, False):
            oks = cells.get((layer, sure), [])
            row.append(f"{sum(oks) / len(oks):.2f} ({sum(oks)}/{len(oks)})" if oks else "-")
        print(f"| {layer} | {row[0]} | {row[1]} |")
    unc = sum(a.action == UNCLASSIFIED for a in answers)
    print(f"| none (UNCLASSIFIED) | | {unc} titles |")


def question_time() -> None:
    """Seconds to rank the questions of a synthetic year of calendar (20 events a day)."""
    import random

    rnd = random.Random(42)
    clf = default_classifier()
    titles = [f"Xq{i} Blorp" for i in range(60)] + [f"Zorblax {c}" for c in "abcdefghij"]
    titles += ["Team standup", "Gym", "Lunch with Ana", "Trening", "Krumpel", "Krumpel 18:00"]
    picked = [rnd.choice(titles) for _ in range(365 * 20)]
    start = time.perf_counter()
    labels = clf.classify_many(picked)
    occ = [
        Occurrence(t, rnd.choice((30, 60, 90)), a.action, a.confidence, a.layer)
        for t, a in zip(picked, labels, strict=True)
    ]
    questions(occ, 10)
    took = time.perf_counter() - start
    print(
        f"\nquestions for a year of calendar ({len(picked):,} events, labelling included): "
        f"{took:.2f} s (the CLI reads only the 6-week window)"
    )


def load(
    name: str, sources: list[str] | None, parser: argparse.ArgumentParser
) -> list[Labelled] | None:
    """The labelled titles of a set (None: the optional extra set is absent, said in a line)."""
    if name == "extra":
        if not (EXTRA / "extra.tsv").is_file():
            print(f"classifier_real: {missing_reason(EXTRA / 'extra.tsv')}")
            return None
        items = read_set(EXTRA / "extra.tsv")
    elif not DATA.is_dir():
        raise SystemExit(f"classifier_real: {missing_reason(DATA)}")
    elif name == "independent":
        items = read_independent(DATA / "independent_titles.jsonl")
    else:
        items = read_set(DATA / f"{name}.tsv")
    if sources:
        unknown = set(sources) - {x.source for x in items}
        if unknown:
            parser.error(
                f"--source: no such source in the {name} set: {', '.join(sorted(unknown))}"
            )
        items = [x for x in items if x.source in sources]
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("eval", "dev", "independent", "extra"), default="eval")
    parser.add_argument("--errors", action="store_true", help="list the wrong answers")
    parser.add_argument("--title-only", action="store_true", help="ignore all but the title")
    parser.add_argument("--source", nargs="+", help="score only these sources")
    args = parser.parse_args()
    items = load(args.set, args.source, parser)
    if items is None:
        return
    events = [EventInfo(title=x.event.title) if args.title_only else x.event for x in items]
    with_place = sum(bool(x.event.location) for x in items)
    print(f"titles with a location: {with_place}/{len(items)}")
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
    known = (*LANGS, *NEW_LANGS)
    for lang in (*known, *sorted(set(by_lang) - set(known))):
        oks = by_lang.get(lang, [])
        if oks:
            print(f"  {lang}  {sum(oks) / len(oks):.3f}  ({sum(oks)}/{len(oks)})")
    print("\nper action (share of that label's titles answered right):")
    for label in sorted(by_label):
        oks = by_label[label]
        print(f"  {label:<14} {sum(oks) / len(oks):.3f}  ({sum(oks)}/{len(oks)})")
    reliability(items, answers)
    print(f"time: {n / took:,.0f} titles/s for this batch (see benchmarks/classifier.py)")
    bare = (
        answers
        if args.title_only
        else clf.classify_many([EventInfo(title=x.event.title) for x in items])
    )
    if with_place and not args.title_only:
        from dataclasses import replace

        unplaced = clf.classify_many([replace(x.event, location="") for x in items])
        _, p_acc, p_act, p_abst = scores(items, unplaced)
        print(
            f"without the location: acc {p_acc}, acc (action titles) {p_act}, abstains {p_abst} "
            "(the tables below read it)"
        )
    table("per language", "lang", items, answers, bare)
    table("per source calendar", "source", items, answers, bare)
    after_answers(items, answers, clf)
    question_time()
    if args.errors:
        print("\nwrong answers (gold <- predicted [layer: rule]):")
        for p, a, x, ok in zip(preds, answers, items, right, strict=True):
            if not ok:
                print(f"  {x.lang} {x.label:<13} <- {p:<13} [{a.layer}: {a.rule}] {x.event.title}")


if __name__ == "__main__":
    main()
