"""Calendar event -> action type, with the layer that decided and a confidence.

Layers, first confident answer wins: the event's own type (Google `eventType`), then the
keyword rules from an editable TOML file. What nothing recognises is UNCLASSIFIED, never
a guess dressed as an answer.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from pathlib import Path

from mappings.actions import ACTIONS, NOT_AN_ACTION, UNCLASSIFIED

LABELS = frozenset({*ACTIONS, NOT_AN_ACTION})


@dataclass(frozen=True, slots=True)
class EventInfo:
    """What the classifier may look at; everything but the title is optional."""

    title: str
    event_type: str = "default"
    all_day: bool = False
    attendee_count: int = 0
    duration_min: float | None = None
    transparency: str = "opaque"


@dataclass(frozen=True, slots=True)
class Classification:
    action: str  # one of ACTIONS, NOT_AN_ACTION or UNCLASSIFIED
    confidence: float
    layer: str  # "event_type", "rules", "none"
    rule: str = ""


@dataclass(frozen=True, slots=True)
class Rule:
    action: str
    priority: int
    regex: re.Pattern[str]


def normalize(title: str) -> str:
    """Lower case, accents removed, whitespace folded: the form rules match against."""
    text = unicodedata.normalize("NFKD", title.casefold())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return " ".join(text.split())


class RulesError(ValueError):
    """The rules file is unusable; the message names the file and the rule."""


def _compile(keywords: list[str], patterns: list[str]) -> re.Pattern[str]:
    parts = [r"(?<!\w)" + re.escape(normalize(k)) + r"(?!\w)" for k in keywords]
    parts += patterns
    return re.compile("|".join(parts))


def load_rules(path: Path | None = None) -> tuple[str, tuple[Rule, ...]]:
    """The rules (highest priority first) and their version, from `path` or the bundled file."""
    source = path or files("mappings").joinpath("classifier_rules.toml")
    name = str(path or "classifier_rules.toml")
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise RulesError(f"{name}: cannot read rules: {err}") from None
    rules = []
    for i, raw in enumerate(data.get("rule", [])):
        action = raw.get("action", "")
        if action not in LABELS:
            raise RulesError(f"{name}: rule {i + 1}: unknown action {action!r}")
        try:
            regex = _compile(list(raw.get("keywords", [])), list(raw.get("patterns", [])))
        except re.error as err:
            raise RulesError(f"{name}: rule {i + 1} ({action}): bad pattern: {err}") from None
        rules.append(Rule(action, int(raw.get("priority", 0)), regex))
    rules.sort(key=lambda r: -r.priority)
    return str(data.get("version", "")), tuple(rules)


@lru_cache(maxsize=8)
def _cached_rules(path: str) -> tuple[str, tuple[Rule, ...]]:
    return load_rules(Path(path) if path else None)


class KeywordClassifier:
    """Event-type hints, then keyword rules."""

    def __init__(self, rules_file: str | Path | None = None) -> None:
        self.version, self.rules = _cached_rules(str(rules_file or ""))

    def classify(self, event: EventInfo | str) -> Classification:
        if isinstance(event, str):
            event = EventInfo(title=event)
        if event.event_type == "focusTime":
            return Classification("DEEP_WORK", 0.95, "event_type")
        if event.event_type in ("outOfOffice", "workingLocation", "birthday"):
            return Classification(NOT_AN_ACTION, 0.95, "event_type")
        text = normalize(event.title)
        if text:
            for rule in self.rules:
                match = rule.regex.search(text)
                if match:
                    return Classification(rule.action, 0.9, "rules", match.group(0))
        if event.all_day:
            # An all-day entry nobody recognises is a marker, not a chosen activity.
            return Classification(NOT_AN_ACTION, 0.6, "event_type")
        return Classification(UNCLASSIFIED, 0.0, "none")
