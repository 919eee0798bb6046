"""The "fatigue" family: people who say yes when they feel up to it, and tire.

Written on its own (from the protocol in bridge.sim.family, the RhythmEnv description of
meters, actions and the hidden profile, and ordinary experience of how people spend a
day), so that a model trained on other families meets different numbers and forms here.

Acceptance: a threshold rule with bounded noise, not a logistic. A recommended action is
done when the person's willingness for it, right now, exceeds their personal threshold
plus noise. The noise is triangular on [-sigma, +sigma] (the sum of two uniforms), so
far enough above the threshold they always say yes and far enough below always no; a
small lapse rate (busy, did not look) caps P(accept) below 1. Willingness is
- their taste for the action in this slot, shaped by S, M and W (below) and by a small
  personal bias per action;
- minus fatigue: effortful actions (deep work, admin, learning, exercise, and socializing
  or family time for a low-S person) build it up, rest wears it down a little and a
  night's sleep mostly clears it; tired people want effort less and rest more;
- minus recommendation fatigue: the same action recommended again and again (a run of
  the same nudge) wears out its welcome; it fades over a few slots;
- plus needs (low Connection makes company welcome, the more so for a high-S person; low
  Progress makes work welcome, the more so for a high-W person; low Serenity makes
  meditation welcome; low Vitality makes rest welcome);
- and the calendar: what is already scheduled in the slot is welcome, anything else less
  so the busier the slot is; an action the slot has no room for is never accepted.
A recommendation that is not taken leaves the slot to the person: what is scheduled (a
meeting is admin work), else what they themselves feel most like doing (willingness plus
a little noise).

Meters: homeostatic and saturating. Each action has a typical effect (a few hundredths to
about 0.2 per slot); gains shrink as a meter nears 1 and losses as it nears 0; every slot
each meter relaxes toward a personal set point; the effect is scaled by multiplicative
log-normal noise (mean 1, never flipping its sign; plus a trace of additive noise).
Effort while tired costs extra Vitality and Cognition; a night slot spent awake costs
Vitality, more for a morning person.

How the axes act (the meaning of bridge.sim.family holds in direction):
- S (social): SOCIALIZE changes Vitality by about -0.11 (S=0) to +0.09 (S=1) and Serenity
  -0.07 to +0.05; FAMILY_TIME's Vitality change also rises with S; ME_TIME restores
  Vitality and Serenity more for a low-S person. Answers: SOCIALIZE and FAMILY_TIME are
  more welcome with S, ME_TIME less; for a low-S person socializing is effort (fatigue).
- M (morning): sets the person's peak slot (M=1 the morning, M=0 the evening). Focused
  actions (DEEP_WORK, LEARN, EXERCISE, a little ADMIN_WORK) are more welcome near the
  peak and pay off better there (Cognition, Progress, Vitality). The night slot costs a
  morning person more Vitality and makes them less willing to do anything but sleep; a
  night owl often turns down SLEEP at the start of the night and takes some quiet time.
- W (work): DEEP_WORK changes Vitality by about -0.13 (W=0) to +0.03 (W=1) and Serenity
  -0.08 to +0.02, ADMIN_WORK likewise but less; DEEP_WORK and ADMIN_WORK are more
  welcome with W, and a high-W person wants to work more when Progress is low.

Answering habits: each person answers at once, late (a geometric delay of a few slots) or
never (a personal share of answers never arrives; the meters still show what happened).

Calendar (own generator, SlotCalendar type): a quarter of people have none; the others
keep an office week (meetings in working half-days, now and then a fully booked
half-day) or a light one (few meetings), with the odd evening or weekend event (family,
friends, exercise, a class). Nights are free.

Drift: about a third of people keep their profile, others drift in a slow daily random
walk, and the rest change in one step between day 10 and day 20 (a new job moves W; a
new baby makes them earlier and less social). `profile(t)` is the truth at slot t.

Splits: "train" and "in" draw from one distribution (S, M, W in [0.1, 0.9], the nuisance
parameters in NUISANCE's training ranges) with disjoint people (different seed streams).
An "ood" person always has one nuisance parameter outside its training range (see
NUISANCE: harder fatigue, noisier answers or meters, more silence, stronger homeostasis)
and, for most of them, one axis at an extreme (in [0, 0.07] or [0.93, 1]; that axis does
not drift).

Measured (200 "in" / "ood" people x 112 recommendations, slots without room skipped): a
random recommender is accepted 0.19 / 0.20 of the time, the action best for the population
in each slot (no person known) 0.52 / 0.50, an oracle reading `accept_probabilities` 0.73.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from bridge.sim.calendar import SlotCalendar
from bridge.sim.family import Answer
from mappings.actions import ACTIONS
from mappings.free_windows import DEFAULT_MIN_MINUTES

SPLIT_CODES = {"train": 0, "in": 1, "ood": 2}
FAMILY_TAG = 0xFA71  # keeps this family's luck apart from the other families'
SLOT_MINUTES = (420, 300, 300, 420)
AXIS_RANGE = (0.1, 0.9)  # S, M, W of "train"/"in" people, at every slot
OOD_EXTREME = 0.07  # an "ood" extreme axis lies in [0, 0.07] or [0.93, 1]
# Nuisance parameters: the training range, and the range an "ood" person may draw from.
NUISANCE: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    "fatigue_gain": ((0.18, 0.40), (0.50, 0.70)),  # fatigue per unit of effort
    "sigma": ((0.12, 0.24), (0.30, 0.40)),  # half-width of the answer noise
    "meter_noise": ((0.10, 0.30), (0.40, 0.55)),  # multiplicative noise on an effect
    "never": ((0.00, 0.25), (0.35, 0.55)),  # share of answers that never arrive
    "relax": ((0.03, 0.08), (0.12, 0.17)),  # pull toward the set point per slot
}
(DEEP, ADMIN, LEARN, EXERCISE, MEDITATE, KIN, SOCIAL, ME_TIME, SLEEP, BINGE) = range(10)
V, C, P, SE, CN = range(5)
NEED = np.array([DEFAULT_MIN_MINUTES[a] for a in ACTIONS])
# How much each action tires (SOCIALIZE and FAMILY_TIME depend on S, set per day) and rests.
EFFORT = np.array([1.0, 0.5, 0.7, 0.9, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
REST = np.array([0.0, 0.0, 0.0, 0.0, 0.4, 0.1, 0.0, 0.5, 1.0, 0.3])
WORK = np.array([1.0, 1.0, 0.3, 0, 0, 0, 0, 0, 0, 0])
COMPANY = np.array([0, 0, 0, 0, 0, 0.6, 1.0, 0, 0, 0])
RESTFUL = np.array([0, 0, 0, 0, 0.6, 0, 0, 0.8, 1.0, 0.5])
CALM = np.array([0, 0, 0, 0, 1.0, 0, 0, 0.4, 0, 0])
TIRED_COST = np.array([0.05, 0.03, 0.0, 0.01, 0.0])  # per unit of fatigue x effort
TIME_PASSING = np.array([-0.01, -0.005, -0.01, 0.0, -0.01])  # being awake, unattended work
OFF_WORK = ("FAMILY_TIME", "SOCIALIZE", "EXERCISE", "LEARN")
MEETINGS = (30, 30, 45, 60, 60, 90)


def _centered(x: float) -> float:
    return 2.0 * x - 1.0


def _alignment(m: float) -> np.ndarray:
    """How well each slot suits focused effort: 1 at the person's peak, down to -1."""
    peak = 2.4 * (1.0 - m) - 0.1
    return np.clip(1.0 - np.abs(np.arange(4) - peak) / 1.4, -1.0, 1.0)


def _taste_rows(cs: float, cm: float, cw: float, al: np.ndarray) -> np.ndarray:
    """Willingness per (slot, action) of a rested person with average meters, weekdays.

    cs, cm, cw: S, M, W mapped to [-1, 1]; al: `_alignment` of each slot. Linear in them.
    """
    out = np.empty((4, 10))
    for slot in range(4):
        a = al[slot]
        row = out[slot]
        row[DEEP] = 0.28 + 0.34 * cw + 0.24 * a
        row[ADMIN] = 0.26 + 0.20 * cw + 0.06 * a
        row[LEARN] = 0.22 + 0.10 * cw + 0.24 * a
        row[EXERCISE] = 0.22 + 0.24 * a + 0.06 * cs
        row[MEDITATE] = 0.22
        row[KIN] = 0.22 + 0.22 * cs
        row[SOCIAL] = 0.14 + 0.40 * cs
        row[ME_TIME] = 0.30 - 0.30 * cs
        row[SLEEP] = -0.30
        row[BINGE] = 0.14
        if slot == 0:
            row[[KIN, SOCIAL, BINGE]] -= 0.2
        elif slot == 2:
            row[[KIN, SOCIAL, BINGE]] += 0.15
            row[[DEEP, ADMIN]] -= 0.1
        elif slot == 3:
            row[:] -= 0.25 + 0.12 * cm  # late hours suit a morning person badly
            row[[MEDITATE, ME_TIME, BINGE]] += 0.1  # winding down
            row[SLEEP] = 0.55 + 0.35 * cm  # a night owl is not ready for bed at ten
    return out


def _effect_rows(cs: float, cm: float, cw: float, al: np.ndarray) -> np.ndarray:
    """Typical meter change per (slot, action, meter) for a rested person, before saturation.

    Same arguments as `_taste_rows`; linear in them.
    """
    out = np.zeros((4, 10, 5))
    for slot in range(4):
        a = al[slot]
        e = out[slot]
        e[DEEP] = (-0.05 + 0.08 * cw, -0.04 + 0.05 * a, 0.10 + 0.04 * a, -0.03 + 0.05 * cw, -0.01)
        e[ADMIN] = (-0.03 + 0.04 * cw, -0.03, 0.05, -0.02 + 0.03 * cw, 0.01)
        e[LEARN] = (-0.03 + 0.02 * a, 0.03 + 0.05 * a, 0.04 + 0.02 * a, 0.01, 0.0)
        e[EXERCISE] = (0.05 + 0.05 * a, 0.02, 0.01, 0.05, 0.01 * cs)
        e[MEDITATE] = (0.02, 0.03, 0.0, 0.09, -0.01)
        e[KIN] = (-0.01 + 0.06 * cs, -0.01, -0.01, 0.03 + 0.02 * cs, 0.09)
        e[SOCIAL] = (-0.01 + 0.10 * cs, -0.02, -0.02, -0.01 + 0.06 * cs, 0.13)
        e[ME_TIME] = (0.03 - 0.04 * cs, 0.01, 0.0, 0.04 - 0.04 * cs, -0.03)
        e[BINGE] = (0.01, -0.04, -0.02, 0.02, -0.01)
        if slot == 3:
            e[SLEEP] = (0.17, 0.10, 0.0, 0.04, 0.0)
            awake = np.arange(10) != SLEEP
            e[awake, V] -= 0.04 + 0.03 * cm  # a night up costs a morning person more
            e[awake, C] -= 0.03
        else:
            e[SLEEP] = (0.06, 0.03, -0.02, 0.02, -0.01)
    return out


def _linear_parts(rows: Callable[..., np.ndarray]) -> np.ndarray:
    """The constant and the coefficients of cs, cm, cw and al of a function linear in them.

    Both tables are written out readably above and evaluated once here, so that a person's
    day costs five array operations (`_evaluate`) instead of a loop over slots.
    """
    zero, one = np.zeros(4), np.ones(4)
    c = rows(0.0, 0.0, 0.0, zero)
    return np.stack(
        [
            c,
            rows(1.0, 0.0, 0.0, zero) - c,
            rows(0.0, 1.0, 0.0, zero) - c,
            rows(0.0, 0.0, 1.0, zero) - c,
            rows(0.0, 0.0, 0.0, one) - c,
        ]
    )


TASTE = _linear_parts(_taste_rows)
EFFECTS = _linear_parts(_effect_rows)


def _evaluate(parts: np.ndarray, s: float, m: float, w: float) -> np.ndarray:
    """`_taste_rows` / `_effect_rows` at profile [s, m, w], from their linear parts."""
    al = _alignment(m).reshape((4,) + (1,) * (parts.ndim - 2))
    return (
        parts[0]
        + _centered(s) * parts[1]
        + _centered(m) * parts[2]
        + _centered(w) * parts[3]
        + al * parts[4]
    )


def _tri_cdf(x: np.ndarray) -> np.ndarray:
    """P(noise < x) for noise the sum of two uniforms on [-1/2, 1/2] (support [-1, 1]).

    0.5 (1 + x)^2 below 0 and 1 - 0.5 (1 - x)^2 above, written as one expression.
    """
    x = np.minimum(1.0, np.maximum(-1.0, x))
    return 0.5 + x - 0.5 * x * np.abs(x)


def _longest_gap(length: int, busy: list[tuple[int, int]]) -> int:
    cursor, best = 0, 0
    for start, end in sorted(busy):
        best = max(best, start - cursor)
        cursor = max(cursor, end)
    return max(best, length - cursor)


@dataclass
class FatiguePerson:
    """One person of the family for one episode (fatigue, nudges and drift are state)."""

    seed: int
    split: str
    base: np.ndarray  # [S, M, W] at slot 0
    params: dict[str, float]  # nuisance parameters (see NUISANCE and `_draw`)
    drift: str  # "none", "walk" or "step"
    calendar_kind: str  # "none", "office" or "light"
    fixed_axis: int | None = None  # an "ood" person's extreme axis, which does not drift
    bias: np.ndarray = field(default_factory=lambda: np.zeros(10))
    set_point: np.ndarray = field(default_factory=lambda: np.full(5, 0.55))
    fatigue: float = 0.0
    nudges: np.ndarray = field(default_factory=lambda: np.zeros(10))
    _asked: tuple[int, int] | None = None
    _days: list[np.ndarray] = field(default_factory=list)
    _tables: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = field(
        default_factory=dict
    )
    _slots: list[SlotCalendar] = field(default_factory=list)
    _drift_rng: np.random.Generator | None = None
    _cal_rng: np.random.Generator | None = None
    _step: tuple[int, int, float, float] = (-1, 0, 0.0, 0.0)  # day, event, size, sign

    # --- the profile and its drift -------------------------------------------------------

    def profile(self, t: int) -> np.ndarray:
        return self._day(max(0, t) // 4).copy()

    def _day(self, day: int) -> np.ndarray:
        if self._drift_rng is None:
            self._drift_rng = np.random.default_rng([FAMILY_TAG, self.seed, 3])
            self._step = (  # when and how the one life event of a "step" person comes
                int(self._drift_rng.integers(10, 21)),
                int(self._drift_rng.integers(0, 2)),
                float(self._drift_rng.uniform(0.2, 0.4)),
                float(self._drift_rng.choice([-1.0, 1.0])),
            )
            self._days.append(self.base.copy())
        lo, hi = AXIS_RANGE
        while len(self._days) <= day:
            d = len(self._days)
            nxt = self._days[-1].copy()
            walk = self._drift_rng.normal(0.0, self.params["walk_sd"], 3)
            if self.drift == "walk":
                nxt = nxt + walk
                nxt = np.where(nxt < lo, 2 * lo - nxt, nxt)  # reflect at the range's ends
                nxt = np.where(nxt > hi, 2 * hi - nxt, nxt)
            elif self.drift == "step" and d == self._step[0]:
                event, size, sign = self._step[1:]
                if event == 0:  # a new job: work suits them better or worse
                    nxt[2] += sign * size
                else:  # a new baby: up earlier, less energy for company
                    nxt[1] += size
                    nxt[0] -= 0.6 * size
            nxt = np.clip(nxt, lo, hi)
            if self.fixed_axis is not None:
                nxt[self.fixed_axis] = self.base[self.fixed_axis]
            self._days.append(nxt)
        return self._days[day]

    def _table(self, day: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """What a day's slots need, computed once per day (the profile moves daily).

        (taste[slot, action] with this day's weekday/weekend and the person's bias,
        effects[slot, action, meter], effort[action], state[5, action]: what fatigue and the
        four needs add to willingness per unit, see `_willingness`).
        """
        got = self._tables.get(day)
        if got is None:
            s, m, w = self._day(day)
            effort = EFFORT.copy()
            effort[SOCIAL] = 0.9 * (1.0 - s)  # company is work for an introvert
            effort[KIN] = 0.4 * (1.0 - s)
            taste = _evaluate(TASTE, s, m, w) + self.bias
            if day % 7 >= 5:  # weekends: work is unwelcome, company welcome (not at night)
                taste[:3] += -0.25 * WORK + 0.1 * COMPANY
            state = np.stack(
                [
                    0.3 * REST - 0.5 * effort,  # tired: effort less welcome, rest more
                    (0.3 + 0.7 * s) * COMPANY,  # lonely: company, the more so for high S
                    (0.2 + 0.8 * w) * WORK,  # behind: work, the more so for high W
                    0.6 * CALM,  # tense: calm
                    0.8 * RESTFUL,  # drained: rest
                ]
            )
            got = (taste, _evaluate(EFFECTS, s, m, w), effort, state)
            if len(self._tables) > 64:
                self._tables.clear()
            self._tables[day] = got
        return got

    # --- the calendar --------------------------------------------------------------------

    def calendar(self, t: int) -> SlotCalendar | None:
        if self.calendar_kind == "none":
            return None
        if self._cal_rng is None:
            self._cal_rng = np.random.default_rng([FAMILY_TAG, self.seed, 4])
        while len(self._slots) <= t:
            self._slots.append(self._next_slot(len(self._slots)))
        return self._slots[t]

    def _next_slot(self, t: int) -> SlotCalendar:
        rng = self._cal_rng
        assert rng is not None
        day, slot = (t // 4) % 7, t % 4
        length = SLOT_MINUTES[slot]
        if slot == 3:
            return SlotCalendar(length, None)
        busy: list[tuple[int, int]] = []
        active = None
        if day < 5 and slot < 2:
            if rng.random() < self.params["booked"]:
                busy.append((int(rng.integers(0, 3)) * 5, length))  # workshop, travel
            for _ in range(int(rng.poisson(self.params["meetings"]))):
                dur = MEETINGS[int(rng.integers(0, len(MEETINGS)))]
                start = 15 * int(rng.integers(0, (length - dur) // 15 + 1))
                busy.append((start, start + dur))
            active = "ADMIN_WORK" if busy else None
        elif rng.random() < (0.35 if day >= 5 else 0.2 if slot == 2 else 0.0):
            dur = 15 * int(rng.integers(4, 13))
            start = 15 * int(rng.integers(0, (length - dur) // 15 + 1))
            busy.append((start, start + dur))
            active = OFF_WORK[int(rng.integers(0, len(OFF_WORK)))]
        return SlotCalendar(_longest_gap(length, busy), active)

    # --- answers -------------------------------------------------------------------------

    def start(self) -> np.ndarray:
        rng = np.random.default_rng([FAMILY_TAG, self.seed, 5])
        return np.clip(self.set_point + rng.normal(0.0, 0.08, 5), 0.15, 0.95)

    def _willingness(self, t: int, meters: np.ndarray, cal: SlotCalendar | None) -> np.ndarray:
        slot = t % 4
        taste, _, _, state = self._table(t // 4)
        v, _, p, se, cn = meters.tolist()
        lonely, behind, tense, drained = 0.5 - cn, 0.5 - p, 0.5 - se, 0.4 - v
        need = np.array([self.fatigue, lonely, behind, tense, drained])
        np.maximum(need, 0.0, out=need)
        will = taste[slot] + need @ state - self.params["nudge_gain"] * self.nudges
        if cal is not None:
            tight = 1.0 - cal.free_minutes / SLOT_MINUTES[slot]
            will -= 0.25 * tight
            if cal.active_event is not None:
                will[ACTIONS.index(cal.active_event)] += 0.25 * tight + 0.1
        return will

    def accept_probabilities(
        self, t: int, meters: np.ndarray, cal: SlotCalendar | None
    ) -> np.ndarray:
        will = self._willingness(t, meters, cal)
        params = self.params
        p = (1.0 - params["lapse"]) * _tri_cdf((will - params["threshold"]) / params["sigma"])
        if cal is not None:
            p[cal.free_minutes < NEED] = 0.0
        return p

    def answer(
        self,
        t: int,
        action: int,
        meters: np.ndarray,
        cal: SlotCalendar | None,
        rng: np.random.Generator,
    ) -> Answer:
        u = rng.random(4)  # always four draws, so every runner meets the same luck
        accepted = bool(u[0] < self.accept_probabilities(t, meters, cal)[action])
        # Remembered (not random) so that `advance` counts the nudge for this slot.
        self._asked = (t, action)
        if u[1] < self.params["never"]:
            return Answer(accepted, None)
        if u[2] >= self.params["late_share"]:
            return Answer(accepted, 0)
        mean = self.params["late_mean"]
        return Answer(accepted, 1 + int(math.log(max(u[3], 1e-12)) / math.log(1 - 1 / mean)))

    # --- a slot passes -------------------------------------------------------------------

    def _habit(self, t: int, meters: np.ndarray, rng: np.random.Generator) -> int:
        cal = self.calendar(t)
        if cal is not None and cal.active_event is not None and rng.random() < 0.85:
            return ACTIONS.index(cal.active_event)
        will = self._willingness(t, meters, cal) + rng.gumbel(0.0, 0.12, 10)
        if cal is not None:
            will = np.where(cal.free_minutes >= NEED, will, -np.inf)
            if not np.isfinite(will).any():
                return ADMIN  # no room for anything: the meetings fill it
        return int(np.argmax(will))

    def advance(
        self,
        t: int,
        meters: np.ndarray,
        action: int,
        accepted: bool,
        rng: np.random.Generator,
    ) -> np.ndarray:
        day, slot = t // 4, t % 4
        done = action if accepted else self._habit(t, meters, rng)
        _, effects, effort, _ = self._table(day)
        d = effects[slot, done] + (TIME_PASSING if done != SLEEP else 0.0)
        if effort[done] > 0:  # effort while tired costs extra
            d = d - (self.fatigue * effort[done]) * TIRED_COST
        # Multiplicative, log-normal with mean 1: a big effect varies more, never flips sign.
        eta = self.params["meter_noise"]
        d = d * np.exp(eta * rng.standard_normal(5) - 0.5 * eta * eta)
        # Saturating: gains shrink toward 1, losses toward 0 (full size from the middle on).
        room = np.where(d > 0, 1.0 - meters, meters)
        after = meters + d * np.minimum(1.0, 2.0 * room)
        after += self.params["relax"] * (self.set_point - meters) + rng.normal(0.0, 0.004, 5)
        after = np.minimum(1.0, np.maximum(0.0, after))
        # State: fatigue, the nudges' memory, and the night's recovery.
        self.fatigue = max(
            0.0,
            0.9 * self.fatigue + self.params["fatigue_gain"] * effort[done] - 0.15 * REST[done],
        )
        self.nudges *= 0.6
        if self._asked is not None and self._asked[0] == t:
            self.nudges[self._asked[1]] += 1.0
        if slot == 3:
            self.fatigue *= self.params["recovery"] if done == SLEEP else 0.75
        return after


@dataclass(frozen=True)
class FatigueFamily:
    name: str = "fatigue"

    def person(self, split: str, index: int, seed: int = 0) -> FatiguePerson:
        if split not in SPLIT_CODES:
            raise ValueError(f"unknown split {split!r}; choose one of: train, in, ood")
        code = SPLIT_CODES[split]
        rng = np.random.default_rng([FAMILY_TAG, code, seed, index])
        ood = split == "ood"
        base = rng.uniform(*AXIS_RANGE, 3)
        fixed = None
        if ood and rng.random() < 0.75:
            fixed = int(rng.integers(0, 3))
            x = rng.uniform(0.0, OOD_EXTREME)
            base[fixed] = x if rng.random() < 0.5 else 1.0 - x
        outside = str(rng.choice(list(NUISANCE))) if ood else None
        params = {
            k: float(rng.uniform(*(ood_range if k == outside else train_range)))
            for k, (train_range, ood_range) in NUISANCE.items()
        }
        params.update(
            threshold=float(rng.uniform(0.20, 0.38)),
            lapse=float(rng.uniform(0.04, 0.14)),
            recovery=float(rng.uniform(0.1, 0.35)),
            nudge_gain=float(rng.uniform(0.04, 0.12)),
            late_share=float(rng.uniform(0.0, 0.5)),
            late_mean=float(rng.uniform(1.5, 4.0)),
            walk_sd=float(rng.uniform(0.01, 0.025)),
            meetings=float(rng.uniform(0.3, 3.5)),
            booked=float(rng.uniform(0.0, 0.15)),
        )
        drift = str(rng.choice(["none", "walk", "step"], p=[0.35, 0.4, 0.25]))
        kind = str(rng.choice(["none", "office", "light"], p=[0.25, 0.5, 0.25]))
        if kind == "light":
            params["meetings"] *= 0.25
            params["booked"] = 0.0
        return FatiguePerson(
            seed=3 * (seed * 10_000_000 + index) + code,
            split=split,
            base=base,
            params=params,
            drift=drift,
            calendar_kind=kind,
            fixed_axis=fixed,
            bias=rng.normal(0.0, 0.05, 10),
            set_point=rng.uniform(0.45, 0.65, 5),
        )


FAMILY = FatigueFamily()
