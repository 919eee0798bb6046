"""rhythm: the RhythmEnv-style world the bundled model was first trained on (bridge.sim.world).

Acceptance: `(1 − answer noise) · sigmoid(appetite)`; the appetite is a sum of profile,
slot and meter terms (tired people refuse deep work, lonely people welcome company, under
stress a low-tolerance person refuses work), lowered by how booked the slot is (−2.5 ×)
and raised for what the calendar already holds (+1). Meters: a base effect per action,
scaled by time of day, shifted by the profile, plus a small drift and Gaussian noise
(sd 0.015); an ignored slot is spent on a habit (admin work by day, TV in the evening,
sleep at night). Every answer arrives at once (no late or missing answers); profiles do
not drift.

How [S, M, W] acts here:
- S: SOCIALIZE raises Vitality by 0.16·(S − 0.5) and Serenity by 0.08·(S − 0.5), ME_TIME
  the opposite; the appetite for SOCIALIZE / FAMILY_TIME rises and for ME_TIME falls with S.
- M: focused work (DEEP_WORK, LEARN) fits the morning for M > 0.5 and the evening for
  M < 0.5: more Progress and Cognition there, and more appetite; a morning person wants
  to sleep less in the morning.
- W: work lifts Vitality (DEEP_WORK 0.22·(W − 0.5)) and Serenity; the appetite for work
  rises with W and for BINGE_WATCH falls.

Splits: bridge.sim.population (train and in: profiles in [0.1, 0.9], noise 0.03–0.12;
ood: one axis or more outside, noisier, less stress tolerance, slower recovery). Without a
calendar by default, as `eval` has always run it; `RhythmFamily(calendars=True)` gives each
person the simulated month of bridge.sim.calendar.
"""

from __future__ import annotations

import numpy as np

from bridge.runner.features import booked
from bridge.sim.calendar import SlotCalendar, month
from bridge.sim.family import Answer
from bridge.sim.population import person as draw_person
from bridge.sim.world import (
    Person,
    accept_probability,
    expected_delta,
    initial_meters,
    step,
)
from mappings.actions import ACTIONS


class RhythmPerson:
    """One bridge.sim.world Person behind the SimPerson protocol; holds no state of its own."""

    def __init__(self, person: Person, calendars: bool = False) -> None:
        self.person = person
        self.seed = person.seed
        self.calendars = calendars
        self._cal: list[SlotCalendar] = []

    def profile(self, t: int) -> np.ndarray:
        return self.person.belief

    def start(self) -> np.ndarray:
        return initial_meters(np.random.default_rng([self.seed, 0]))

    def calendar(self, t: int) -> SlotCalendar | None:
        if not self.calendars:
            return None
        if t >= len(self._cal):
            # The month is drawn slot by slot from one generator, so a longer month starts
            # with the shorter one: growing it keeps every slot already seen.
            self._cal = month(self.seed, max(2 * t + 2, 346))
        return self._cal[t]

    def accept_probabilities(
        self, t: int, meters: np.ndarray, cal: SlotCalendar | None
    ) -> np.ndarray:
        if cal is None:
            return accept_probability(self.person, t % 4, meters)
        return accept_probability(
            self.person,
            t % 4,
            meters,
            busy=booked(cal.free_minutes),
            scheduled=ACTIONS.index(cal.active_event) if cal.active_event else None,
            fits=np.array([cal.fits(x) for x in ACTIONS]),
        )

    def answer(
        self,
        t: int,
        action: int,
        meters: np.ndarray,
        cal: SlotCalendar | None,
        rng: np.random.Generator,
    ) -> Answer:
        return Answer(bool(rng.random() < self.accept_probabilities(t, meters, cal)[action]))

    def advance(
        self,
        t: int,
        meters: np.ndarray,
        action: int,
        accepted: bool,
        rng: np.random.Generator,
    ) -> np.ndarray:
        return step(self.person, meters, t % 4, action, accepted=accepted, rng=rng)

    def expected_delta(self, t: int, action: int) -> np.ndarray:
        """The mean meter change of `action` at slot t (the oracle's health rule reads it)."""
        return expected_delta(self.person, action, t % 4)


class RhythmFamily:
    name = "rhythm"

    def __init__(self, calendars: bool = False) -> None:
        self.calendars = calendars

    def person(self, split: str, index: int, seed: int = 0) -> RhythmPerson:
        return RhythmPerson(draw_person(split, index, seed), self.calendars)


FAMILY = RhythmFamily()
