"""Layer 1: the person's own corrections, matched on a title pattern; they always win.

A correction's pattern is the corrected title in a loose form (lower case, accents gone,
numbers folded), so correcting "Gym - 7am" also covers "Gym - 8am". A `*` in the text
stands for any run of characters ("standup *" covers every standup). A correction also
answers for its title's group: the titles that differ from it only in times, numbers,
case, accents and punctuation ("Trening", "Trening 18:00", "trening!"), never for a
title with another word in it ("Trening odwołany").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from mappings.classifier import LABELS, Classification, normalize, strip_times

MAX_KEY = 500  # the stored column's width
_DIGITS = re.compile(r"\d+")
_EDGES = re.compile(r"^[^\w*#]+|[^\w*#]+$")  # keeps "*" wildcards and "#" numbers
_NOT_WORD = re.compile(r"[^\w#]+")


def title_pattern(title: str) -> str:
    """The loose form of a title that a correction is stored and matched under."""
    return _EDGES.sub("", _DIGITS.sub("#", normalize(title)))[:MAX_KEY]


def group_key(title: str) -> str:
    """The key of a title's group of near-duplicates: recurrences and retyped copies of
    one event ("Trening", "Trening 18:00", "trening") share it; a different word does not
    ("Trening odwołany"). Times go, other numbers fold to "#", punctuation to spaces.

    A title that is nothing but a time ("06:00-14:00", "7h-15h": a shift of a roster) is
    its own group, times kept: an empty key would be no group, never asked about."""
    text = normalize(title)
    key = " ".join(_NOT_WORD.sub(" ", _DIGITS.sub("#", strip_times(text))).split())
    if not key:
        key = " ".join(_NOT_WORD.sub(" ", text).split()) or text
    return key[:MAX_KEY]


@dataclass(frozen=True, slots=True)
class Correction:
    pattern: str  # title_pattern(...) of the corrected title, may contain "*"
    action: str
    title: str = ""  # the title as corrected: its group is answered too


class Overrides:
    """Exact patterns by dictionary, wildcard ones in order; later corrections win."""

    def __init__(self, corrections: Iterable[Correction] = ()) -> None:
        self.exact: dict[str, str] = {}
        self.groups: dict[str, str] = {}  # group_key of a corrected title -> its action
        self.wild: list[tuple[re.Pattern[str], Correction]] = []
        for c in corrections:
            if c.action not in LABELS:
                raise ValueError(f"correction {c.pattern!r}: unknown action {c.action!r}")
            if "*" in c.pattern:
                parts = (re.escape(p) for p in c.pattern.split("*"))
                self.wild.insert(0, (re.compile(".*".join(parts) + r"\Z"), c))
            else:
                self.exact[c.pattern] = c.action
                if key := group_key(c.title):
                    self.groups[key] = c.action

    def __len__(self) -> int:
        return len(self.exact) + len(self.wild)

    def match(self, title: str) -> Classification | None:
        if not len(self):
            return None
        key = title_pattern(title)
        action = self.exact.get(key)
        if action is not None:
            return Classification(action, 1.0, "override", key)
        if self.groups:
            group = group_key(title)
            action = self.groups.get(group)
            if action is not None:
                return Classification(action, 1.0, "override", group)
        for regex, c in self.wild:
            if regex.match(key):
                return Classification(c.action, 1.0, "override", c.pattern)
        return None
