"""A few good questions: the title groups whose answer would set the most calendar time right.

Every real calendar repeats itself, so one answer from the person labels a whole group of
events: every recurrence and every near-duplicate of the title (`group_key`). A group is
worth asking about by the minutes it covers times the chance that the classifier's guess
is wrong (`DOUBT`): an unlabelled group first, a model's or the event's shape's guess next,
and a keyword rule's answer only when it covers many times more time than the unsure ones
(a rule misreading a long weekly block is otherwise never found). The person's own answers
and the event's declared type are never asked about, nor is a group the person answered.
Pure: the caller reads the events and the answered groups from wherever they live.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from mappings.actions import UNCLASSIFIED
from mappings.classifier_overrides import group_key

DEFAULT_QUESTIONS = 5
# A keyword rule's or the model's answer at or above this is one of its confident ones.
SURE = 0.9
# Layers whose answer is the person's own: a group with one is answered.
ANSWERED_LAYERS = frozenset({"override", "user"})
# Never asked about: the person's own answers and the calendar's declared type.
NEVER_ASKED = ANSWERED_LAYERS | {"event_type"}
# The share of wrong answers per layer, (confident, unsure), on the development set of real
# calendars (`benchmarks/classifier_real.py --set dev`, its layer table, 2026-11-28): rules
# 0.94 / 0.83 right, the model 0.82 / 0.42 (its probabilities are those of its training
# titles, far too sure on other people's calendars), the shape alone 0.60.
DOUBT: dict[str, tuple[float, float]] = {
    "rules": (0.06, 0.17),
    "model": (0.18, 0.58),
    "context": (0.40, 0.40),
    "none": (1.0, 1.0),
}
# Not measured here (the benchmark runs without an endpoint): its own confidence says.
OWN_SAY = frozenset({"llm"})


def doubt(action: str, layer: str, confidence: float) -> float:
    """The chance that a guess is wrong, as measured for its layer (0: never ask)."""
    if action == UNCLASSIFIED:
        return 1.0
    if layer in NEVER_ASKED:
        return 0.0
    measured = DOUBT.get(layer)
    if measured is None:
        return min(max(1.0 - confidence, 0.0), 1.0)
    return measured[0] if confidence >= SURE else measured[1]


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One timed event as the classifier labelled it."""

    title: str
    minutes: float
    action: str
    confidence: float
    layer: str = ""


@dataclass(frozen=True, slots=True)
class Question:
    title: str  # the group's most written title
    minutes: int  # calendar minutes the answer would label
    occurrences: int
    guess: str  # what the classifier says now (UNCLASSIFIED when nothing)
    confidence: float
    key: str  # group_key of the title

    def as_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        del doc["key"]
        return doc


def questions(
    events: Iterable[Occurrence],
    n: int = DEFAULT_QUESTIONS,
    answered: Collection[str] = (),
) -> list[Question]:
    """The n best questions, most minutes likely set right first (ties: the less sure
    guess first)."""
    groups: dict[str, list[Occurrence]] = defaultdict(list)
    for ev in events:
        key = group_key(ev.title)
        if key:
            groups[key].append(ev)
    found = []
    for key, occ in groups.items():
        if key in answered or any(o.layer in ANSWERED_LAYERS for o in occ):
            continue
        minutes: dict[str, float] = defaultdict(float)
        for o in occ:
            minutes[o.action] += max(o.minutes, 0.0)
        guess = max(minutes, key=lambda a: (minutes[a], a != UNCLASSIFIED))
        sure = [o for o in occ if o.action == guess]
        confidence = sum(o.confidence for o in sure) / len(sure)
        layer = Counter(o.layer for o in sure).most_common(1)[0][0]
        wrong = doubt(guess, layer, confidence)
        if wrong <= 0.0:
            continue
        title = Counter(o.title.strip() for o in occ).most_common(1)[0][0]
        total = sum(minutes.values())
        question = Question(title, round(total), len(occ), guess, round(confidence, 3), key)
        found.append((total * wrong, question))
    found.sort(key=lambda f: (-f[0], f[1].confidence, f[1].key))
    return [q for _, q in found[: max(n, 0)]]
