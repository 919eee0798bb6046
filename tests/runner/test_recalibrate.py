"""The per-person correction of the bundled runner's stated P(accept): it follows a person
the runner's offset grid cannot, is fitted on what the runner stated then, and never
changes a choice."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bridge.runner.base import STATED
from bridge.runner.bundled import BundledRunner
from bridge.runner.recalibrate import recalibrated, shift
from mappings.actions import ACTIONS

EXERCISE = ACTIONS.index("EXERCISE")


def _item(slot: int, accepted: bool, stated: float | None = None, **extra):
    item = {
        "day": 0,
        "slot": slot,
        "meters": {},
        "action": "EXERCISE",
        "response": "accepted" if accepted else "ignored",
        "meter_deltas": {},
        **extra,
    }
    if stated is not None:
        item[STATED] = stated
    return item


def _lived(runner: BundledRunner, answers: list[bool]) -> list[dict]:
    """A history as the product stores it: each item carries what the runner stated for it
    before its answer."""
    history: list[dict] = []
    for t, yes in enumerate(answers):
        slot = t % 3
        stated = runner.predict({"slot": slot}, history, corrected=False)[EXERCISE]
        history.append(_item(slot, yes, float(stated)))
    return history


@pytest.fixture(scope="module")
def flipped() -> list[dict]:
    return _lived(BundledRunner(), [True] * 30 + [False] * 30)


def test_a_person_who_turns_against_the_suggestions_is_followed_further(flipped):
    runner = BundledRunner()
    own = runner.predict({"slot": 0}, flipped, corrected=False)[EXERCISE]
    corrected = runner.predict({"slot": 0}, flipped)[EXERCISE]
    assert corrected < own - 0.05, (own, corrected)
    # ... and one who keeps saying yes more than the runner expects, the other way.
    keen = _lived(runner, [True] * 40)
    assert (
        runner.predict({"slot": 1}, keen)[EXERCISE]
        > runner.predict({"slot": 1}, keen, corrected=False)[EXERCISE]
    )


def test_with_nothing_stated_and_answered_the_runners_own_p_is_kept_exactly():
    runner = BundledRunner()
    unstated = [_item(t % 3, t % 2 == 0) for t in range(12)]  # older rows, the simulator's
    unanswered = [
        {**_item(0, False, 0.9), "response": r} for r in ("expired", None, "later", "accepted?")
    ]
    for history in ([], unstated, unanswered, unstated + unanswered):
        own = runner.predict({"slot": 2}, history, corrected=False)
        assert np.array_equal(runner.predict({"slot": 2}, history), own)
        assert shift(history) == 0.0
    off = BundledRunner(recalibrate=0.0)
    assert shift(unanswered, sd=0.0) == 0.0
    assert off.recommend({"slot": 2}, unstated).extra["expected_accept"] == pytest.approx(
        off.predict({"slot": 2}, unstated, corrected=False)[
            ACTIONS.index(off.recommend({"slot": 2}, unstated).action)
        ]
    )


def test_extreme_and_broken_histories_give_no_nan():
    p = np.array([0.0, 1e-300, 0.3, 1.0 - 1e-12, 1.0])
    histories = [
        [_item(0, True, 1e-12)] * 500,  # always yes to what was stated impossible
        [_item(0, False, 1.0)] * 500,  # always no to what was stated certain
        [_item(0, bool(t % 2), s) for t, s in enumerate((0.0, 1.0, float("nan"), math.inf))],
        [_item(0, True, "0.4"), _item(0, True, None), _item(0, False, -math.inf)],  # type: ignore[arg-type]
    ]
    for history in histories:
        out = recalibrated(p, history)
        assert np.all(np.isfinite(out)) and np.all((out >= 0) & (out <= 1)), (history[:2], out)
        assert math.isfinite(shift(history))
    # The prior keeps the correction finite however one-sided the answers.
    assert 0 < shift(histories[0]) < 30 and -30 < shift(histories[1]) < 0


def test_the_correction_changes_no_recommendation(flipped):
    on, off = BundledRunner(), BundledRunner(recalibrate=0.0)
    runner = BundledRunner()
    histories = [
        [],
        flipped[:5],
        flipped,
        _lived(runner, [False] * 25),
        _lived(runner, [True, False, False] * 8),
    ]
    moved = 0
    for history in histories:
        for slot in range(4):
            a, b = on.recommend({"slot": slot}, history), off.recommend({"slot": slot}, history)
            assert (a.action, a.belief, a.extra[STATED]) == (b.action, b.belief, b.extra[STATED])
            assert b.extra["expected_accept"] == pytest.approx(b.extra[STATED])
            moved += a.extra["expected_accept"] != pytest.approx(b.extra["expected_accept"])
    assert moved >= 8  # the correction was there to change something, and changed no choice
