"""What a family of simulated people provides, so episodes, training and `eval` run any of them.

Families are written independently of one another and of the bundled model, each with its
own acceptance rule, meter dynamics, answering habits and calendar, so that a model
trained on some of them can be tested on one it never saw (leave one family out).

The belief [S, M, W] means the same thing in every family; only how it shows differs:
- S, social, in [0, 1]: 0 = time with others drains the person (SOCIALIZE lowers their
  Vitality and Serenity, ME_TIME restores them), 1 = time with others recharges them
  (SOCIALIZE and FAMILY_TIME raise Vitality; they seek it out, avoid being alone).
- M, morning, in [0, 1]: 0 = a late chronotype (focused work, learning and exercise go
  best and are welcome later in the day), 1 = a morning person (they go best and are
  welcome in the morning; late slots suit them badly).
- W, work, in [0, 1]: 0 = work drains them (DEEP_WORK / ADMIN_WORK cost Vitality and
  Serenity; they accept it reluctantly), 1 = work recharges them (it costs little or
  lifts Vitality; they want to do it).
Each family documents, in its module docstring, how each axis acts on its answers and its
meters. A family may move these values over weeks (drift); `profile(t)` is then the truth
at slot t, and a belief is scored against it.

Time: slot t is day t // 4 (day 0 a Monday), slot t % 4 (0 morning, 1 afternoon,
2 evening, 3 night). Meters are the five values of `mappings.actions.METERS`, in [0, 1].
Actions are indices into `mappings.actions.ACTIONS`.

Randomness: a person draws nothing from a global generator. Everything random comes from
its own seed (profile, calendar) or from the generators passed in (answers, dynamics), so
every runner meets the same person with the same luck.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from bridge.sim.calendar import SlotCalendar

SPLITS = ("train", "in", "ood")


@dataclass(frozen=True)
class Answer:
    """What the person did with a recommendation, and when the runner hears of it.

    `accepted`: whether they did the recommended action (else their habit filled the slot).
    `delay`: slots until the answer reaches the runner (0 = before the next
    recommendation); None = they never answer (the meters still show what happened).
    """

    accepted: bool
    delay: int | None = 0


class SimPerson(Protocol):
    """One simulated person for one episode; it may keep state (fatigue, habits, drift)."""

    seed: int

    def profile(self, t: int) -> np.ndarray:
        """The true [S, M, W] at slot t."""
        ...

    def start(self) -> np.ndarray:
        """The five meters before slot 0."""
        ...

    def calendar(self, t: int) -> SlotCalendar | None:
        """Slot t of the person's calendar, or None for a person without one."""
        ...

    def accept_probabilities(
        self, t: int, meters: np.ndarray, cal: SlotCalendar | None
    ) -> np.ndarray:
        """P(accept) of each of the 10 actions if recommended now; changes no state.

        Zero for an action the calendar has no room for. This is what an oracle that knows
        the person (profile and current state) would read.
        """
        ...

    def answer(
        self,
        t: int,
        action: int,
        meters: np.ndarray,
        cal: SlotCalendar | None,
        rng: np.random.Generator,
    ) -> Answer:
        """The person's answer to `action` recommended at slot t (draws from `rng` only)."""
        ...

    def advance(
        self,
        t: int,
        meters: np.ndarray,
        action: int,
        accepted: bool,
        rng: np.random.Generator,
    ) -> np.ndarray:
        """The meters after slot t (the action if accepted, else what they did instead).

        Updates the person's own state (fatigue, habits, novelty, drift). Called once per
        slot, also for slots that got no recommendation (then `accepted` is False).
        """
        ...


class Family(Protocol):
    name: str  # short, lower case: the name `eval --family` takes

    def person(self, split: str, index: int, seed: int = 0) -> SimPerson:
        """Person `index` of `split` ("train", "in" or "ood"); same arguments, same person.

        "train" and "in" share one distribution (disjoint people); "ood" people have at
        least one profile value or nuisance parameter outside the training ranges.
        """
        ...
