"""The pattern gate: a title skips only patterns that cannot match it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mappings.classifier import KeywordClassifier, normalize
from mappings.classifier_gate import PatternGate, required_literals
from mappings.classifier_model import bundled_training_set, read_labelled

BENCH_DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"


@pytest.mark.parametrize(
    ("pattern", "strings"),
    [
        (r"news", {"news"}),
        (r"\bnews(?: today|:|$)", {"news"}),
        (r"(?:meeting|mtg|mtng)$", {"meeting", "mtg", "mtng"}),
        (r"^apt\b|\bapt$", {"apt"}),
        (r"\w+ vs\.? \w", {" vs ", " vs. "}),
        (r"(?<!good )news", {"news"}),  # a look-behind is not part of the match
        (r"colou?r", {"color", "colour"}),
        (r"(?:ab)+cd", {"ab"}),  # "ab" and "cd" are each needed; either will do
        (r"x(?:yz)*", {"x"}),  # too short to gate on: the pattern always runs
        (r"\d{3,4}[a-z]", None),
        (r"ab|\d+", None),  # one branch needs no string
        (r"(?i)news", None),  # case-folded: not followed
        (r"(?:spel|game)(?:avond|night)", {"spelavond", "spelnight", "gameavond", "gamenight"}),
    ],
)
def test_the_strings_a_pattern_needs(pattern: str, strings: set[str] | None) -> None:
    assert required_literals(re.compile(pattern)) == (
        None if strings is None else frozenset(strings)
    )


HOSTILE = ["", " ", "a", "news", "(usa) vs. fc", "trening 18:00", "会議", "x" * 500, "td1 tp2"]


def _titles() -> list[str]:
    titles = [t for t, _ in read_labelled(bundled_training_set())]
    for path in sorted(BENCH_DATA.glob("*.tsv")):
        titles += [t for t, _ in read_labelled(path)]
    return [normalize(t) for t in titles] + HOSTILE


def test_no_bundled_pattern_is_skipped_for_a_title_it_matches() -> None:
    # Over every title the project has (training, evaluation) and a few odd ones: each
    # pattern that finds a match is among the gate's candidates. Without this the rules
    # would silently change their answers.
    rules = KeywordClassifier()
    patterns = [regex for _, regex in rules._patterns]
    gate = PatternGate(patterns)
    assert len(gate.always) < len(patterns) / 4  # the gate does skip most patterns
    matched = 0
    for text in _titles():
        maybe = gate.candidates(text)
        for pos, regex in enumerate(patterns):
            if regex.search(text):
                matched += 1
                assert pos in maybe, (text, regex.pattern[:80])
    assert matched > 100


def test_the_rules_answer_as_without_the_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = KeywordClassifier()
    titles = _titles()
    gated = [rules.match_title(t) for t in titles]
    ungated = KeywordClassifier()
    monkeypatch.setattr(ungated._gate, "always", frozenset(range(len(ungated._patterns))))
    assert [ungated.match_title(t) for t in titles] == gated
