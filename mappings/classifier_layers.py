"""The layered classifier: corrections, rules, learned model, context, optional LLM.

First confident answer wins; each answer names its layer and carries a confidence. What
no layer knows is UNCLASSIFIED with confidence 0, never a guess dressed as an answer.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Protocol

from mappings.actions import NOT_AN_ACTION, UNCLASSIFIED
from mappings.classifier import (
    Classification,
    EventInfo,
    KeywordClassifier,
    model_text,
)
from mappings.classifier_model import LearnedModel
from mappings.classifier_overrides import Overrides, group_key

MODEL_MIN_CONFIDENCE = 0.4
# An all-day entry is mostly a marker (a holiday, a trip, someone's day); the model must be
# surer before it calls one an activity.
ALL_DAY_MIN_CONFIDENCE = 0.7
# A calendar leans to an action when the person's answers about it say so: at least
# LEAN_MIN of the title groups they answered in it, and at least LEAN_SHARE of them, are
# that action. Its titles the rules do not know, and the model is less than LEAN_BELOW
# sure of, are then read as that action: a person who answers three classes of a
# timetable has said what the timetable holds. Only answers count: counting the rules'
# answers too spread a calendar-wide misreading to all its titles (docs/lab).
LEAN_MIN = 3
LEAN_SHARE = 0.6
LEAN_BELOW = 0.7
LAYERS = ("override", "event_type", "rules", "model", "llm", "context", "none")
UNKNOWN = Classification(UNCLASSIFIED, 0.0, "none")
# Answers to an invitation that still put the person in the room.
INVITED = frozenset({"accepted", "tentative", "needsAction"})
# Kinds of place a location names when the rules do not know its words: where one is
# taught, moves or is treated, in the languages the rules cover. Whole words or word
# starts, accents folded by the caller (lower case, NFKD without marks).
PLACES = (
    (
        "LEARN",
        r"hoersaal|horsaal|aula|amphi\w*|lecture hall|lecture theat\w*|classroom|"
        r"seminar\w*|horsal\w*|auditori\w*|sala wykladowa|luentosali|dershane|"
        r"講義室|教室",
    ),
    (
        "EXERCISE",
        r"gym|fitness\w*|silownia|basen\w*|schwimmbad|hallenbad|piscin\w*|pool|aquapark|"
        r"sporthal\w*|turnhalle|stadion\w*|simhall\w*|svommehal\w*|uimahalli|spor salonu|"
        r"ジム|プール|体育館",
    ),
    (
        "ADMIN_WORK",
        r"clinic\w*|klinik\w*|przychodni\w*|praxis|arztpraxis|hospital\w*|szpital\w*|"
        r"krankenhaus|ambulatori\w*|terveyskeskus|vardcentral\w*|legevakt|hastane\w*|"
        r"病院|クリニック",
    ),
)
_PLACE_RES = tuple((a, re.compile(rf"(?<!\w)(?:{p})(?!\w)")) for a, p in PLACES)


def _fold(text: str) -> str:
    import unicodedata

    text = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in text if not unicodedata.combining(c)).replace("ł", "l")


def place_guess(location: str, rules: KeywordClassifier | None = None) -> tuple[str, str] | None:
    """(action, why) when an event's location names what is done there, else None."""
    if not location.strip():
        return None
    if rules is not None:
        # A location the rules read like a title ("Yoga Studio", "Kościół św. Anny").
        found = rules.match_title(location)
        if found is not None and found.action != NOT_AN_ACTION:
            return found.action, f"location {location!r}"
    folded = _fold(location)
    for action, pattern in _PLACE_RES:
        if pattern.search(folded):
            return action, f"location {location!r}"
    return None


class LLMLayer(Protocol):
    """Asks a language model; None when it has no valid, confident answer (or may not ask)."""

    def ask(self, event: EventInfo) -> Classification | None: ...


def context_guess(
    event: EventInfo, rules: KeywordClassifier | None = None
) -> Classification | None:
    """What the event's shape says when its title says nothing we know."""
    if event.all_day:
        # An all-day entry nobody recognises is a marker, not a chosen activity.
        return Classification(NOT_AN_ACTION, 0.6, "context", "all-day")
    if event.transparency == "transparent" and event.attendee_count <= 1:
        # Shown as free and nobody else invited: a reminder or marker, not a block of time.
        return Classification(NOT_AN_ACTION, 0.55, "context", "shows as free")
    if rules is not None and event.calendar_name:
        # A calendar the person named for what it holds ("Kurse", "Training", "Arbeit"):
        # what its name says is what its unknown entries are.
        by_name = rules.match_title(event.calendar_name)
        if by_name is not None and by_name.action != NOT_AN_ACTION:
            return Classification(
                by_name.action, 0.5, "context", f"calendar {event.calendar_name!r}"
            )
    place = place_guess(event.location, rules)
    if place is not None:
        # A gym, a pool, a lecture hall or a clinic says what the slot is spent on,
        # like a calendar named for it.
        return Classification(place[0], 0.5, "context", place[1])
    if event.organized_by_me and event.attendee_count >= 2:
        # The person invited at least one other: a meeting they run.
        return Classification("ADMIN_WORK", 0.55, "context", "organized, with attendees")
    if event.attendee_count >= 3:
        return Classification("ADMIN_WORK", 0.55, "context", f"{event.attendee_count} attendees")
    if event.attendee_count >= 2 and event.self_response in INVITED:
        # Someone else's invitation to the person and at least one other: a meeting.
        return Classification("ADMIN_WORK", 0.5, "context", "invited with others")
    duration = event.duration_min or 0
    if event.recurring and event.attendee_count == 0 and 45 <= duration <= 240:
        # A weekly block of one to four hours that nobody else is invited to is, in
        # published calendars, nearly always a class from a timetable.
        return Classification("LEARN", 0.5, "context", "recurring block, no attendees")
    hour = event.start_hour
    if duration >= 300 and hour is not None and (hour >= 21 or hour <= 1):
        return Classification("SLEEP", 0.55, "context", "long block overnight")
    return None


class LayeredClassifier:
    """Stack the layers; any may be left out (None), which the benchmark uses to compare."""

    def __init__(
        self,
        rules: KeywordClassifier | None = None,
        model: LearnedModel | None = None,
        overrides: Overrides | None = None,
        llm: LLMLayer | None = None,
        *,
        model_min_confidence: float = MODEL_MIN_CONFIDENCE,
        use_context: bool = True,
    ) -> None:
        self.rules = rules
        self.model = model
        self.overrides = overrides or Overrides()
        self.llm = llm
        self.model_min_confidence = model_min_confidence
        self.use_context = use_context

    @property
    def version(self) -> str:
        """Changes whenever an answer could change: rules, model or corrections."""
        parts = [
            self.rules.version if self.rules else "-",
            self.model.version if self.model else "-",
            repr(sorted(self.overrides.exact.items()))
            + repr(sorted(self.overrides.groups.items()))
            + repr([c for _, c in self.overrides.wild]),
            "llm" if self.llm else "-",
        ]
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]

    def classify(self, event: EventInfo | str) -> Classification:
        return self.classify_many([event])[0]

    def classify_many(self, events: Sequence[EventInfo | str]) -> list[Classification]:
        """One answer per event, in order; the model scores all undecided titles at once."""
        infos = [EventInfo(title=e) if isinstance(e, str) else e for e in events]
        out: list[Classification | None] = [self._before_model(e) for e in infos]
        todo = [i for i, r in enumerate(out) if r is None]
        if self.model is not None and todo:
            for i, (label, p) in zip(
                # The model reads the words of a title, not its times, codes and rooms.
                todo,
                self.model.predict([model_text(infos[i].title) for i in todo]),
                strict=True,
            ):
                floor = self.model_min_confidence
                if infos[i].all_day:
                    floor = max(floor, ALL_DAY_MIN_CONFIDENCE)
                if label != UNCLASSIFIED and p >= floor:
                    out[i] = Classification(label, round(p, 3), "model")
        for i in todo:
            lean, found = infos[i].calendar_lean, out[i]
            if lean and self.use_context and (found is None or found.confidence < LEAN_BELOW):
                out[i] = Classification(lean, 0.5, "context", f"calendar mostly {lean}")
        return [
            r if r is not None else self._after_model(e) for r, e in zip(out, infos, strict=True)
        ]

    def calendar_lean(self, titles: Iterable[str]) -> str:
        """The action one calendar's titles lean to by the person's answers ("" when none
        clearly leads): counted per answered title group, so that retyped copies of one
        answer count once."""
        answered: dict[str, str] = {}
        for t in sorted(set(titles)):
            found = self.overrides.match(t)
            if found is not None:
                answered.setdefault(group_key(t), found.action)
        known = Counter(answered.values())
        if not known:
            return ""
        action, n = known.most_common(1)[0]
        if action == NOT_AN_ACTION or n < LEAN_MIN or n < LEAN_SHARE * known.total():
            return ""
        return action

    def _before_model(self, event: EventInfo) -> Classification | None:
        found = self.overrides.match(event.title)
        if found is None and self.rules is not None:
            found = self.rules.match(event)
        return found

    def _after_model(self, event: EventInfo) -> Classification:
        # The LLM is asked only about what the person's answers, the rules, the model and
        # the event's shape all leave open: the least that leaves the machine.
        found = context_guess(event, self.rules) if self.use_context else None
        if found is None and self.llm is not None and event.title.strip():
            found = self.llm.ask(event)
        return found or UNKNOWN


def default_classifier() -> LayeredClassifier:
    """The bundled rules and model, no corrections, no LLM: usable without the daemon."""
    from mappings.classifier_model import load

    return LayeredClassifier(rules=KeywordClassifier(), model=load())
