"""Which of the rules' regular expressions could match a title, found without running them.

Every title the keywords leave open used to be searched by each of the 60-odd pattern
rules in turn, and most titles match none: that search was most of the rules layer's time.
Most patterns cannot match unless the text holds one of a few literal strings ("news",
" vs ", "(usa"); those strings are read off the pattern's parse tree once, and a title
runs only the patterns whose strings it holds. A pattern with no such string (one made of
character classes, `\\d{3,4}`) always runs. The same idea as a regex engine's prefilter
(RE2, Hyperscan), on the standard library's own parser.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

# Up to this many alternative strings are spelled out; beyond, the parts are kept apart.
SPELLED = 64
# Literals are looked up by their first two or three characters (a title's substrings of
# those lengths); a pattern whose strings include a shorter one always runs.
GRAM = 3
_ZERO_WIDTH = (sre.AT, sre.ASSERT, sre.ASSERT_NOT)
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT))

Strings = frozenset[str]


def required_literals(regex: re.Pattern[str]) -> Strings | None:
    """Strings one of which is in any text the pattern finds a match in, or None when the
    pattern has no such set (or uses a flag this does not follow)."""
    if regex.flags & (re.IGNORECASE | re.VERBOSE):
        return None
    try:
        tree = sre_parse.parse(regex.pattern, regex.flags)
    except re.error:  # compiled already, so only a parser this code does not know
        return None
    return _sequence(tree)[1]


def _best(options: Sequence[Strings | None]) -> Strings | None:
    """The most selective requirement: the longest shortest string, then the fewest."""
    usable = [s for s in options if s and "" not in s]
    if not usable:
        return None
    best = max(usable, key=lambda s: (min(map(len, s)), -len(s)))
    # "news today" adds nothing beside "news": a text holding it holds "news".
    return frozenset(s for s in best if not any(t != s and t in s for t in best))


def _node(op: object, av: Any) -> tuple[Strings | None, Strings | None]:
    """(exact, required) of one parse node: every match of it is one of `exact` (None when
    not a short finite set), and contains one of `required` (None when nothing is known)."""
    if op is sre.LITERAL:
        char = chr(av)
        return frozenset({char}), frozenset({char})
    if op in _ZERO_WIDTH:
        return frozenset({""}), None
    if op is sre.SUBPATTERN:
        _group, add_flags, _del_flags, body = av
        if add_flags & re.IGNORECASE:
            return None, None
        return _sequence(body)
    if op is sre.BRANCH:
        parts = [_sequence(alt) for alt in av[1]]
        spelled = [e for e, _ in parts if e is not None]
        if len(spelled) == len(parts):
            union = frozenset[str]().union(*spelled)
            if len(union) <= SPELLED:
                return union, _best([union])
        wanted = [r for _, r in parts if r is not None]
        if len(wanted) == len(parts):
            return None, frozenset[str]().union(*wanted)
        return None, None
    if op in _REPEATS:
        low, high, body = av
        exact, needed = _sequence(body)
        if (low, high) == (0, 1) and exact is not None:
            return exact | {""}, None
        if low == high == 1:
            return exact, needed
        return None, needed if low >= 1 else None
    return None, None  # a character class, any character, a back-reference: no string


def _sequence(items: Any) -> tuple[Strings | None, Strings | None]:
    options: list[Strings | None] = []
    run: Strings = frozenset({""})  # the strings the current run of exact nodes spells
    whole = True
    for op, av in items:
        exact, needed = _node(op, av)
        if exact is not None and len(run) * len(exact) <= SPELLED:
            run = frozenset(a + b for a in run for b in exact)
            continue
        whole = False
        options += [run, needed]
        run = exact if exact is not None else frozenset({""})
    options.append(run)
    return (run if whole else None), _best(options)


class PatternGate:
    """For a list of patterns, the positions of those that could match a text."""

    def __init__(self, patterns: Sequence[re.Pattern[str]]) -> None:
        by_gram: dict[str, set[int]] = defaultdict(set)
        always = set()
        for pos, regex in enumerate(patterns):
            strings = required_literals(regex)
            if strings is None or min(map(len, strings)) < 2:
                always.add(pos)
                continue
            for s in strings:
                by_gram[s[:GRAM]].add(pos)
        self.always = frozenset(always)
        self._by_gram = {g: frozenset(p) for g, p in by_gram.items()}
        self._grams = frozenset(self._by_gram)
        self._sizes = sorted({len(g) for g in self._grams})

    def candidates(self, text: str) -> frozenset[int]:
        """Positions of the patterns that may match `text` (a superset of those that do)."""
        grams = {text[i : i + n] for n in self._sizes for i in range(len(text) - n + 1)}
        found = set(self.always)
        for g in grams & self._grams:
            found |= self._by_gram[g]
        return frozenset(found)
