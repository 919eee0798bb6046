"""A few good questions: the title groups whose answer would label the most calendar time.

Every real calendar repeats itself, so one answer from the person labels a whole group of
events: every recurrence and every near-duplicate of the title (`group_key`). The groups
asked about are those the classifier leaves unlabelled or labels with little confidence,
best first by the minutes they cover; a group the person has answered is never asked again.
Pure: the caller reads the events and the answered groups from wherever they live.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from mappings.actions import UNCLASSIFIED
from mappings.classifier_overrides import group_key

# An answer below this is a guess worth confirming: whatever the learned model or the
# event's shape alone says; a keyword rule (0.9), the event's type (0.95) and the person's
# answers (1.0) are not asked about. Chosen on the development set's "after k answers"
# curve (0.7: 90% after 10 answers; 0.9: 93%; asking about rules too: 96%).
ASK_BELOW = 0.9
DEFAULT_QUESTIONS = 5
# Layers whose answer is the person's own.
ANSWERED_LAYERS = frozenset({"override", "user"})


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
    """The n best questions, most minutes first (ties: the less sure guess first)."""
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
        if guess != UNCLASSIFIED and confidence >= ASK_BELOW:
            continue
        title = Counter(o.title.strip() for o in occ).most_common(1)[0][0]
        total = round(sum(minutes.values()))
        found.append(Question(title, total, len(occ), guess, round(confidence, 3), key))
    found.sort(key=lambda q: (-q.minutes, q.confidence, q.key))
    return found[: max(n, 0)]
