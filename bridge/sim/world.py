"""RhythmEnv-style simulated people: hidden profile, meter dynamics, Accept/Ignore.

A person has a hidden profile S (social), M (morning), W (work) in [0, 1] plus nuisance
parameters: answer noise (the chance of ignoring for no reason), stress tolerance and
recovery speed. Meters move by a base effect per action, scaled by time of day and
shifted by the profile; the person accepts a recommendation with a probability that
depends on the profile, the slot and how the meters stand.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from mappings.actions import ACTIONS, METERS

N_ACTIONS, N_METERS, N_SLOTS = len(ACTIONS), len(METERS), 4
A = {name: i for i, name in enumerate(ACTIONS)}
V, C, P, SE, CO = range(5)  # meter indices: vitality, cognition, progress, serenity, connection
CRASH = 0.1

# Base effect of each action on (vitality, cognition, progress, serenity, connection).
BASE = np.array(
    [
        [-0.06, -0.08, +0.12, -0.05, -0.02],  # DEEP_WORK
        [-0.03, -0.04, +0.06, -0.03, +0.01],  # ADMIN_WORK
        [-0.03, -0.05, +0.06, +0.01, +0.00],  # LEARN
        [+0.07, +0.04, +0.00, +0.06, +0.00],  # EXERCISE
        [+0.02, +0.06, +0.00, +0.10, +0.00],  # MEDITATE
        [+0.00, +0.02, +0.00, +0.05, +0.10],  # FAMILY_TIME
        [-0.03, -0.02, +0.00, +0.02, +0.15],  # SOCIALIZE
        [+0.04, +0.05, +0.00, +0.06, -0.03],  # ME_TIME
        [+0.15, +0.14, +0.00, +0.04, +0.00],  # SLEEP
        [+0.02, -0.03, -0.02, +0.03, -0.02],  # BINGE_WATCH
    ]
)
# Time-of-day multiplier on each action's base effect (morning, afternoon, evening, night).
TIME_MULT = np.ones((N_ACTIONS, N_SLOTS))
TIME_MULT[A["DEEP_WORK"]] = TIME_MULT[A["ADMIN_WORK"]] = TIME_MULT[A["LEARN"]] = (
    1.2,
    1.0,
    0.8,
    0.6,
)
TIME_MULT[A["EXERCISE"]] = (1.2, 1.0, 0.8, 0.4)
TIME_MULT[A["SLEEP"]] = (0.5, 0.5, 0.7, 1.0)
# Every slot costs a little of everything; what the person does decides the rest.
DRIFT = np.array([-0.02, -0.01, -0.02, -0.01, -0.01])
# What a person does with a slot when they ignore the recommendation.
HABIT = (A["ADMIN_WORK"], A["ADMIN_WORK"], A["BINGE_WATCH"], A["SLEEP"])
WORK = (A["DEEP_WORK"], A["ADMIN_WORK"], A["LEARN"])
FOCUS = (A["DEEP_WORK"], A["LEARN"])
DELTA_NOISE = 0.015


@dataclass(frozen=True)
class Person:
    social: float
    morning: float
    work: float
    answer_noise: float
    stress_tolerance: float
    recovery: float
    seed: int

    @property
    def belief(self) -> np.ndarray:
        return np.array([self.social, self.morning, self.work])

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def alignment(slot: int, morning: float) -> float:
    """How well focused work fits this slot for this chronotype, in [-1, 1]."""
    lean = 2.0 * (morning - 0.5)
    return (lean, 0.3 * lean, -lean, -lean)[slot]


def expected_delta(person: Person, action: int, slot: int) -> np.ndarray:
    """The mean change of the five meters when `person` does `action` in `slot`."""
    d = BASE[action] * TIME_MULT[action, slot]
    d = d.copy()
    s, w = person.social - 0.5, person.work - 0.5
    if action == A["SOCIALIZE"]:
        d[V] += 0.16 * s  # an introvert is drained by a party, an extrovert recharges
        d[SE] += 0.08 * s
    elif action == A["FAMILY_TIME"]:
        d[V] += 0.06 * s
    elif action == A["ME_TIME"]:
        d[V] -= 0.08 * s
        d[SE] -= 0.04 * s
    if action in FOCUS:
        al = alignment(slot, person.morning)
        d[P] *= 1.0 + 0.6 * al  # a morning person gets more done in the morning
        d[C] += 0.05 * al
    if action in WORK:
        d[V] += (0.22 if action == A["DEEP_WORK"] else 0.12) * w  # a workaholic recovers
        d[SE] += 0.05 * w
    if d[SE] < 0:
        d[SE] *= 1.5 - person.stress_tolerance
    if action in (A["SLEEP"], A["ME_TIME"], A["MEDITATE"]):
        d[V] = d[V] * person.recovery if d[V] > 0 else d[V]
        d[C] = d[C] * person.recovery if d[C] > 0 else d[C]
    return d + DRIFT


def utility(person: Person, slot: int, meters: np.ndarray) -> np.ndarray:
    """The person's appetite (a logit) for each action now."""
    s, m, w = person.social - 0.5, person.morning - 0.5, person.work - 0.5
    v, c, p, se, co = meters
    al = alignment(slot, person.morning)
    tired = max(0.0, 0.4 - v) * 5  # 0 when fine, 2 when at zero
    foggy = max(0.0, 0.4 - c) * 5
    night, morning, evening = slot == 3, slot == 0, slot == 2
    u = np.zeros(N_ACTIONS)
    u[A["DEEP_WORK"]] = 0.4 + 3.0 * w + 2.0 * al + 1.5 * (0.5 - p) - 1.2 * tired - foggy
    u[A["ADMIN_WORK"]] = 0.0 + 2.0 * w + 0.6 * al + 1.0 * (0.5 - p) - 0.6 * tired
    u[A["LEARN"]] = 0.0 + 1.5 * w + 1.5 * al - 0.8 * foggy
    u[A["EXERCISE"]] = 0.2 + 1.5 * al - 1.5 * tired
    u[A["MEDITATE"]] = -0.4 - 1.0 * s + 2.0 * (0.5 - se) + 0.8 * foggy
    u[A["FAMILY_TIME"]] = 0.0 + 2.0 * s + 2.0 * (0.5 - co) + (1.0 if evening else 0.0)
    u[A["SOCIALIZE"]] = 0.2 + 4.0 * s + 2.0 * (0.5 - co) + (0.6 if evening else 0.0)
    u[A["ME_TIME"]] = 0.2 - 3.0 * s + 1.0 * (0.5 - se) + foggy + (0.4 if evening else 0.0)
    u[A["SLEEP"]] = (
        -2.5 + 2.0 * tired + foggy + (4.5 if night else 0.0) - (2.0 * m if morning else 0.0)
    )
    u[A["BINGE_WATCH"]] = -0.6 - 2.0 * w + (0.8 if evening else 0.0)
    if night:
        u[list(WORK)] -= 2.0
        u[[A["EXERCISE"], A["SOCIALIZE"]]] -= 1.5
    if morning:
        u[[A["SOCIALIZE"], A["BINGE_WATCH"], A["FAMILY_TIME"]]] -= 1.0
    # Under stress every demand weighs more, by how little stress this person tolerates.
    if se < 0.3:
        u[list(WORK)] -= (0.3 - se) * 10 * (1.2 - person.stress_tolerance)
    return u


# With a calendar: a booked slot makes any suggestion less welcome whatever the profile
# (the reason an Ignore there says little about preferences), an action the calendar
# already holds is easy to say yes to, and one that does not fit cannot be done at all.
BOOKED_PENALTY = 2.5
SCHEDULED_BONUS = 1.0


def accept_probability(
    person: Person,
    slot: int,
    meters: np.ndarray,
    *,
    busy: float = 0.0,
    scheduled: int | None = None,
    fits: np.ndarray | None = None,
) -> np.ndarray:
    """P(accept) for each of the 10 actions; answer noise is ignoring for no reason.

    `busy` (0 free .. 1 fully booked), `scheduled` (the action index the calendar holds)
    and `fits` (which actions a free stretch is long enough for) come from a calendar.
    """
    u = utility(person, slot, meters) - BOOKED_PENALTY * busy
    if scheduled is not None:
        u[scheduled] += SCHEDULED_BONUS
    p = (1.0 - person.answer_noise) / (1.0 + np.exp(-u))
    return p if fits is None else np.where(fits, p, 0.0)


def initial_meters(rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(0.45, 0.75, N_METERS)


def step(
    person: Person,
    meters: np.ndarray,
    slot: int,
    action: int,
    *,
    accepted: bool,
    rng: np.random.Generator,
) -> np.ndarray:
    """The meters after the slot: the recommended action if accepted, else the habit."""
    done = action if accepted else HABIT[slot]
    delta = expected_delta(person, done, slot) + rng.normal(0.0, DELTA_NOISE, N_METERS)
    return np.clip(meters + delta, 0.0, 1.0)
