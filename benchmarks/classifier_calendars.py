"""The classifier and its questions on whole real calendars: every event, every recurrence.

    .venv/bin/python benchmarks/classifier_calendars.py DIR [--days 365] [--retrain]
        [--source NAME ...]

`benchmarks/classifier_real.py` scores each distinct title of a calendar once; a person's
calendar repeats its series week after week, and the target of issue 42 is the share of
*its* event-minutes labelled right after the person answers the k best questions. This
reads calendar files as the daemon does (`connectors.ics`: recurrences expanded, the
event's shape as stored, `bridge.cycle.classify.event_info`) over the `--days` up to the
file's last written start, and answers the questions with the labels of DIR:

    DIR/calendars/<source>.ics   the calendar files (read-only, outside this repository)
    DIR/labels.tsv               source, title, label: every distinct title of each file,
                                 labelled by benchmarks/data/real_calendars/RUBRIC.md
    DIR/SOURCES.md               where each file comes from
    DIR/names.tsv                (optional) source, the file name its owner gave it

The daemon reads a calendar's file name as the name the person gave it ("Kurse.ics",
"dienstplan.ics": `mappings.classifier.calendar_name`), and a holiday calendar by it. The
files of DIR are named by whoever labelled them, after what they hold ("xx-club-shifts"),
so a file is read under its owner's file name from names.tsv, or under no name at all.

Real calendars come from other public repositories, so DIR lives outside this repository
and is never committed. Per source it prints the zero-question accuracy and abstention on
the distinct titles that name an action, and the share of timed event-minutes labelled
right after k = 0, 3, 5, 10 answers, ranked as the product ranks them
(`mappings.classifier_questions.questions`) and, as the baseline of the same run, as they
were ranked before 2026-11-28 (only groups below 0.9 confidence, by minutes alone).
UNCLASSIFIED and NOT_AN_ACTION are the same answer, "no action". After k answers every
event is labelled anew, as the daemon does: each answer labels its group, and a calendar
the answers mostly give one action leans to it (`LayeredClassifier.calendar_lean`).
`--retrain` also does what the daemon does with answers besides: the model is fitted again
with them (`bridge.cycle.classify.retrain`: counted thrice; about 2.5 s per source and k).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.classifier_real import KS, answered_classifier, no_action
from bridge.config import Settings
from bridge.cycle.classify import Standing, calendar_leans, event_infos
from bridge.store.models import CalendarEvent
from connectors import ics
from connectors.base import EventRecord, ReadContext
from mappings.actions import NOT_AN_ACTION, UNCLASSIFIED
from mappings.classifier import LABELS, Classification
from mappings.classifier_layers import default_classifier
from mappings.classifier_overrides import group_key
from mappings.classifier_questions import SURE, Occurrence, questions

_START = re.compile(rb"^DTSTART[^:\r\n]*:(\d{8})", re.MULTILINE)


def read_labels(path: Path) -> dict[tuple[str, str], str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    cols = lines[0].split("\t")
    if cols[:3] != ["source", "title", "label"]:
        raise SystemExit(f"{path}: header must be source, title, label")
    out = {}
    for n, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) < 3 or cells[2].strip() not in LABELS:
            raise SystemExit(f"{path}:{n}: want source, title and one of the labels")
        out[cells[0], cells[1].strip()] = cells[2].strip()
    return out


def read_names(path: Path) -> dict[str, str]:
    """source -> the file name its owner gave the calendar (names.tsv, if there is one)."""
    if not path.is_file():
        return {}
    out = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        cells = line.split("\t")
        if len(cells) != 2 or not cells[1].strip():
            raise SystemExit(f"{path}:{n}: want source, file name")
        out[cells[0].strip()] = cells[1].strip()
    return out


def events_of(path: Path, days: int, settings: Settings, name: str = "") -> list[CalendarEvent]:
    """The file's held events over `days` up to its last written start, as stored rows,
    under the calendar id `/calendars/<name>` (an id that names nothing without one)."""
    data = path.read_bytes()
    starts = _START.findall(data)
    if not starts:
        return []
    last = datetime.strptime(max(starts).decode(), "%Y%m%d").replace(tzinfo=UTC)
    ctx = ReadContext(
        tz=settings.tz, now=last + timedelta(days=1), past_days=days + 1, future_days=0
    )
    rows = []
    calendar_id = f"/calendars/{name or '0'}"
    for rec in ics.records_from_bytes(data, calendar_id, ctx, str(path)):
        if isinstance(rec, EventRecord) and rec.status != "cancelled" and rec.title:
            rows.append(CalendarEvent(**rec.row("ics", ctx.now)))
    return rows


def old_questions(occ: list[Occurrence], k: int) -> set[str]:
    """The ranking before 2026-11-28: groups below SURE (or unlabelled), by minutes."""
    minutes: dict[str, float] = defaultdict(float)
    unsure: set[str] = set()
    for o in occ:
        key = group_key(o.title)
        minutes[key] += o.minutes
        if o.action == UNCLASSIFIED or o.confidence < SURE:
            unsure.add(key)
    return set(sorted(unsure, key=lambda key: -minutes[key])[:k])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--source", nargs="+", help="only these sources")
    parser.add_argument("--retrain", action="store_true", help="refit the model with answers")
    args = parser.parse_args()
    files = sorted((args.dir / "calendars").glob("*.ics"))
    if not files or not (args.dir / "labels.tsv").is_file():
        raise SystemExit(f"classifier_calendars: {args.dir} has no calendars/*.ics or labels.tsv")
    labels = read_labels(args.dir / "labels.tsv")
    names = read_names(args.dir / "names.tsv")
    settings = Settings(timezone="UTC")
    clf = default_classifier()
    print(f"{len(files)} calendars, the {args.days} days up to each file's last written start")
    print(
        "| source | events | distinct titles | acc (action titles) | abstains | timed minutes | "
        + " | ".join(f"k={k}" for k in KS)
        + " | k=10 before |"
    )
    print("|---|---|---|---|---|---|" + "---|" * (len(KS) + 1))
    totals = [0.0] * (len(KS) + 1)
    all_minutes = 0.0
    pooled = [0, 0, 0]  # action titles, right, abstained
    unlabelled = 0
    for path in files:
        source = path.stem
        if args.source and source not in args.source:
            continue
        rows = events_of(path, args.days, settings, names.get(source, ""))
        gold = []
        kept = []
        for ev in rows:
            label = labels.get((source, ev.title.strip()))
            if label is None:
                unlabelled += 1
                continue
            gold.append(label)
            kept.append(ev)
        standing = [Standing(0, ev.title, ev.calendar_id) for ev in rows]
        infos = event_infos(kept, settings, standing)
        answers: list[Classification] = clf.classify_many(infos)
        firsts: dict[str, int] = {}
        for i, ev in enumerate(kept):
            firsts.setdefault(ev.title.strip(), i)
        acts = [i for i in firsts.values() if gold[i] != NOT_AN_ACTION]
        ok = sum(no_action(answers[i].action) == gold[i] for i in acts)
        abst = sum(answers[i].action == UNCLASSIFIED for i in acts)
        pooled = [pooled[0] + len(acts), pooled[1] + ok, pooled[2] + abst]
        timed = [i for i, ev in enumerate(kept) if not ev.all_day]
        occ = [
            Occurrence(
                kept[i].title,
                (kept[i].end_utc - kept[i].start_utc).total_seconds() / 60,
                answers[i].action,
                answers[i].confidence,
                answers[i].layer,
            )
            for i in timed
        ]
        minutes = sum(o.minutes for o in occ)
        asked_by = [{q.key for q in questions(occ, k)} for k in KS] + [old_questions(occ, 10)]
        shares = []
        for j, asked in enumerate(asked_by):
            now = answers
            if asked:
                # As the daemon does: each answer labels its group, the calendar may come
                # to lean (calendar_lean), and every event is labelled anew.
                pairs = zip(timed, occ, strict=True)
                given = {group_key(o.title): (o.title, gold[i]) for i, o in pairs}
                after = answered_classifier(
                    clf, [given[key] for key in sorted(asked)], args.retrain
                )
                leans = calendar_leans(after, standing)
                again = event_infos([kept[i] for i in timed], settings, standing, leans)
                now = list(answers)
                for i, lab in zip(timed, after.classify_many(again), strict=True):
                    now[i] = lab
            right = sum(
                o.minutes
                for i, o in zip(timed, occ, strict=True)
                if group_key(o.title) in asked or no_action(now[i].action) == gold[i]
            )
            shares.append(right / minutes if minutes else 0.0)
            totals[j] += right
        all_minutes += minutes
        acc = f"{ok / len(acts):.2f}" if acts else "-"
        ab = f"{abst / len(acts):.0%}" if acts else "-"
        cells = " | ".join(f"{x:.0%}" for x in shares)
        print(
            f"| {source} | {len(kept)} | {len(firsts)} | {acc} | {ab} | {minutes:,.0f} | {cells} |"
        )
    if all_minutes and pooled[0]:
        cells = " | ".join(f"{t / all_minutes:.0%}" for t in totals)
        acc, ab = pooled[1] / pooled[0], pooled[2] / pooled[0]
        head = f"| all | | {pooled[0]} action | {acc:.2f} | {ab:.0%}"
        print(f"{head} | {all_minutes:,.0f} | {cells} |")
    if unlabelled:
        print(f"{unlabelled} events had no label in labels.tsv and were left out")


if __name__ == "__main__":
    main()
