"""What the page says in words next to its numbers: each meter's meaning and which way is
good, confidence as high / medium / low, who labelled an event and how sure it is, and
what the model's belief axes mean."""

from __future__ import annotations

import re

from mappings.actions import ACTIONS, NOT_AN_ACTION, UNCLASSIFIED, action_name

# One line per meter: what it measures, and which way is good (all five: higher).
METER_MEANINGS: dict[str, str] = {
    "vitality": "Body energy from sleep, heart rate, HRV and movement. Higher is better.",
    "cognition": "Mental sharpness from last night's sleep and how packed your day is. "
    "Higher is better.",
    "progress": "Getting things done: focus time, tasks ticked off, deadlines ahead. "
    "Higher is better.",
    "serenity": "Calm: stress, HRV, meetings and how full the day is. Higher is better.",
    "connection": "Time with friends and family over the past 7 days. Higher is better.",
}

# Confidence in [0, 1] as a word: below 0.5 the page also hatches the meter (low).
HIGH_CONFIDENCE = 0.75
LOW_CONFIDENCE = 0.5


def confidence_word(value: float | None) -> str:
    if value is None:
        return "none"
    if value >= HIGH_CONFIDENCE:
        return "high"
    return "medium" if value >= LOW_CONFIDENCE else "low"


# Who gave an event its label (mappings/classifier.py's layers), in words.
LAYER_WORDS: dict[str, str] = {
    "user": "your label",
    "override": "your label",
    "event_type": "by the calendar's event type",
    "rules": "by a rule",
    "model": "guessed by the model",
    "llm": "guessed by the LLM",
    "context": "guessed from the events around it",
    "none": "not labelled",
}
SURE_LABEL = 0.8  # a label at or above this confidence is shown as "sure"


def label_words(layer: str | None, confidence: float | None) -> str:
    """'by a rule, sure' / 'guessed by the model, unsure' (the number stays in a tooltip)."""
    who = LAYER_WORDS.get(layer or "none", layer or "not labelled")
    if layer in ("user", "override", "none", None) or confidence is None:
        return who
    return f"{who}, {'sure' if confidence >= SURE_LABEL else 'unsure'}"


BELIEF_LINE = (
    "Learnt from your answers: three traits from 0 to 1, each between the two words next to "
    "it; ± is how unsure the model still is."
)
# The ends of each belief axis (0 and 1), as the bundled model's rationale words them.
BELIEF_ENDS: dict[str, tuple[str, str]] = {
    "social": ("introvert", "extrovert"),
    "morning": ("late riser", "morning person"),
    "work": ("work drains you", "work recharges you"),
}


_CONSTANT = re.compile(r"\b(" + "|".join((*ACTIONS, NOT_AN_ACTION, UNCLASSIFIED)) + r")\b")


def readable(text: str | None) -> str:
    """A rationale as a person reads it: action constants by their names ("Admin work next",
    "morning deep work accepted 3x") and P(accept) as the chance you accept."""
    if not text:
        return ""

    def name(m: re.Match[str]) -> str:
        human = action_name(m.group(1))
        return human if m.start() == 0 else human.lower()

    return _CONSTANT.sub(name, text).replace("P(accept)", "chance you accept ")
