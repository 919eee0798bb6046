"""The "habits" family: people who choose between a suggestion, their habit and something new.

Acceptance. In each slot the person weighs three alternatives and picks one by a softmax
with a personal temperature: the recommended action, their habitual action for this
kind of slot (weekday or weekend x morning/afternoon/evening/night), and the most
tempting thing they have not done for a while. They accept when the recommendation wins
the draw. Each alternative's value is the action's worth to this person now (`_values`:
a base by slot and weekday, the profile terms below, and needs read from the meters: low
Vitality pulls towards SLEEP and ME_TIME, low Connection towards company, low Serenity
towards MEDITATE, low Cognition away from DEEP_WORK) plus the habit's pull for that slot.
The recommendation also gets a personal trust bonus and, like the novel option, a bonus
for novelty (a per-person taste times how long ago the action was last done, saturating
with a personal time constant). A scheduled calendar event is an extra alternative with a
commitment bonus; an action the calendar has no room for is neither accepted (P = 0) nor
done instead. Habits start from the person's tastes (one action per kind of slot, drawn
by a softmax over its values, with a strength of 0.4-0.9), grow with each repetition and
weaken each time the slot goes to something else, so a person can drift into new
routines, and a recommender that keeps suggesting the same thing can build one.
Declining is therefore relative: the same suggestion wins against a weak habit and
loses against a strong one, and after a refusal the person did their habit or the novel
thing (drawn in `advance` from the same values).

Meters. Every action has a neutral effect on the five meters (a few hundredths up to
~0.15 for a night's sleep), scaled by a personal gain and shrunk near the bounds
(diminishing returns); the profile modulates it as below. A personal share of 15-45 % of
the effect shows only in the next slot (lag), so each observed change mixes this slot's
action with the last one. Every waking slot also costs a little of every meter (Vitality
and Cognition more in a night without sleep) and adds Student-t noise (3-8 degrees of
freedom, a personal scale of 0.008-0.022, cut at +-0.12); some mornings bring a life
shock: a bad night that drains Vitality and Cognition by up to ~0.2.

How S, M and W act (the directions of bridge/sim/family.py):
- S (social). Answers: SOCIALIZE gains value with S by a personal strength k_S
  (0.4-0.8) x (2S - 1), FAMILY_TIME half as much, and ME_TIME loses 0.6 of it.
  Meters: SOCIALIZE moves Vitality by about +-0.09 x (2S - 1) and Serenity by
  +-0.05 x (2S - 1); FAMILY_TIME moves Vitality by +-0.05 x (2S - 1); ME_TIME restores
  Vitality and Serenity more the lower S is (up to +0.08) and costs a little for S near 1.
- M (morning). With fit = (2M - 1) x c(slot), c = (1, 0.3, -0.6, -1) for morning,
  afternoon, evening, night: DEEP_WORK, LEARN and EXERCISE gain value by a personal
  strength k_M (0.4-0.8) times fit (welcome in the morning for M near 1, late for M near
  0), and SLEEP in the night slot gains 0.6 k_M (2M - 1) (a late person is still up at
  22:00, a morning person wants to be asleep). Meters: DEEP_WORK's Progress is
  multiplied by 1 + 0.5 fit and its Cognition cost shrinks with fit; LEARN's Cognition
  and Progress rise with fit; EXERCISE's Vitality gain rises by 0.04 fit.
- W (work). Answers: DEEP_WORK gains value by a personal strength k_W (0.4-0.8) times
  (2W - 1), ADMIN_WORK 0.6 of it. Meters: DEEP_WORK moves Vitality by 0.07 x (2W - 1)
  and Serenity by 0.04 x (2W - 1) (a drain for W near 0, a lift for W near 1);
  ADMIN_WORK about half.
The meter terms of each axis are scaled by a personal factor of 0.75-1.25.

Answering. Each person has an answering style: prompt (answer before the next
recommendation), rare (never answers 30-70 % of the time: delay None), late (most answers
reach the runner 1-8 slots later) or both. The meters show what happened regardless.

Drift. 30 % of the people (45 % out of distribution) move along one axis by 0.1-0.25
over four weeks (112 slots), linearly, towards the side with room; `profile(t)` is the
truth at slot t, and the values and meter effects follow it.

Calendar. About 60 % have none (`calendar` returns None). The rest have a light one of
this module's own making: one to four weekly commitments (a class, a run, a dinner), the
odd one-off event, and for some a few weekday meetings (ADMIN_WORK).

Splits. "train" and "in" draw from the same ranges with disjoint seeds (a base of 0, 10^9
or 2 x 10^9 per split, plus seed x 10^6 + index). Training ranges: profile values in
[0.1, 0.9] (drift stays inside), temperature 0.2-0.4, habit pull 0.1-0.5, novelty taste
0-0.4, lag 0.15-0.45, noise degrees of freedom 3-8, shock chance 2-8 % a morning, never
answered at most 70 %, delays 1-8 slots. An "ood" person has at least one profile value
in [0, 0.1) or (0.9, 1], stronger drift (0.25-0.4, within [0, 1]), and each nuisance
parameter has an even chance of coming from beyond its training range (hotter choices,
stronger habits, more novelty-seeking, longer lag, heavier tails, more shocks, rarer and
later answers).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from bridge.sim.calendar import SlotCalendar
from bridge.sim.family import SPLITS, Answer
from mappings.actions import ACTIONS
from mappings.free_windows import DEFAULT_MIN_MINUTES

DEEP, ADMIN, LEARN, EXERCISE, MEDITATE, FAM, SOCIAL, ME, SLEEP, BINGE = range(10)
V, C, P, SE, CN = range(5)
N_ACTIONS = len(ACTIONS)
ALL_FIT = np.ones(N_ACTIONS, dtype=bool)
SPLIT_BASE = {"train": 0, "in": 1_000_000_000, "ood": 2_000_000_000}
FAMILY_KEY = 22_0003  # keeps this family's random streams apart from any other family's
TRAIN_PROFILE = (0.1, 0.9)
CHRONO = (1.0, 0.3, -0.6, -1.0)  # how much a slot favours a morning person over a late one
SLOT_MINUTES = (420, 300, 300, 420)  # the default slot boundaries 05:00, 12:00, 17:00, 22:00
NEED = np.array([DEFAULT_MIN_MINUTES[a] for a in ACTIONS])
MIN_NEED = int(NEED.min())

# What an action is worth to a neutral person, by [weekend][slot]; the profile, the meters
# and the habits are added on top.
_BASE_DAY = np.array(
    [
        # DEEP  ADMIN LEARN  EXER   MEDIT  FAMILY SOCIAL ME     SLEEP  BINGE
        [0.15, 0.05, 0.0, 0.05, -0.05, -0.25, -0.35, -0.1, -0.6, -0.45],  # morning
        [0.1, 0.1, 0.0, 0.0, -0.1, -0.15, -0.1, -0.05, -0.55, -0.3],  # afternoon
        [-0.2, -0.25, 0.0, 0.0, 0.0, 0.15, 0.1, 0.1, -0.3, 0.1],  # evening
        [-0.5, -0.6, -0.35, -0.5, -0.1, -0.4, -0.3, 0.0, 0.45, 0.05],  # night
    ]
)
_BASE_WEEKEND = np.array(
    [
        [-0.3, -0.45, 0.0, 0.1, 0.0, 0.1, -0.15, 0.05, -0.3, -0.2],
        [-0.3, -0.4, -0.05, 0.05, -0.05, 0.15, 0.1, 0.05, -0.5, -0.1],
        [-0.45, -0.55, -0.15, -0.1, 0.0, 0.15, 0.2, 0.05, -0.3, 0.1],
        [-0.6, -0.7, -0.4, -0.5, -0.1, -0.3, -0.1, 0.0, 0.4, 0.1],
    ]
)
BASE = np.stack([_BASE_DAY, _BASE_WEEKEND])
# Needs read from the meters: (action, pull, meter, level below which it pulls).
_NEEDS = (
    (SLEEP, 1.2, V, 0.4),
    (ME, 0.5, V, 0.45),
    (EXERCISE, -0.6, V, 0.35),
    (DEEP, -0.8, C, 0.4),
    (DEEP, 0.4, P, 0.4),
    (ADMIN, 0.3, P, 0.4),
    (MEDITATE, 0.6, SE, 0.4),
    (SOCIAL, 0.6, CN, 0.4),
    (FAM, 0.6, CN, 0.4),
)
NEEDS = np.zeros((10, len(_NEEDS)))
for _i, (_a, _pull, _m, _level) in enumerate(_NEEDS):
    NEEDS[_a, _i] = _pull
NEED_METER = np.array([n[2] for n in _NEEDS])
NEED_LEVEL = np.array([n[3] for n in _NEEDS])

# An action's effect on (Vitality, Cognition, Progress, Serenity, Connection) for a
# neutral person (S = M = W = 0.5) in a slot that suits it.
EFFECT = np.array(
    [
        [-0.03, -0.07, 0.12, -0.01, -0.01],  # DEEP_WORK
        [-0.02, -0.03, 0.06, -0.02, 0.0],  # ADMIN_WORK
        [-0.02, 0.02, 0.04, 0.0, 0.0],  # LEARN
        [0.04, 0.02, 0.0, 0.04, 0.0],  # EXERCISE
        [0.01, 0.02, 0.0, 0.08, 0.0],  # MEDITATE
        [0.0, 0.0, -0.01, 0.03, 0.1],  # FAMILY_TIME
        [-0.01, -0.01, -0.01, 0.0, 0.12],  # SOCIALIZE
        [0.03, 0.02, 0.0, 0.04, -0.02],  # ME_TIME
        [0.05, 0.05, 0.0, 0.02, 0.0],  # SLEEP (a daytime nap; the night is below)
        [0.01, -0.03, -0.01, 0.02, 0.0],  # BINGE_WATCH
    ]
)
NIGHT_SLEEP = np.array([0.16, 0.14, 0.0, 0.03, 0.0])
# Every slot awake costs a little; a night awake costs more.
PASSIVE_DAY = np.array([-0.03, -0.008, -0.012, -0.025, -0.012])
PASSIVE_NIGHT_AWAKE = np.array([-0.06, -0.05, 0.0, -0.02, 0.0])

# Light calendars: what a weekly commitment or a one-off event is, by slot.
CAL_EVENTS = (
    (EXERCISE, LEARN, FAM),
    (SOCIAL, EXERCISE, FAM, LEARN),
    (FAM, SOCIAL, EXERCISE, LEARN, BINGE),
    (),
)
GRID = 15


def _ranged(rng: np.random.Generator, lo: float, hi: float, ood: bool, beyond: float) -> float:
    """A nuisance parameter: inside [lo, hi], or for an ood person (half the time) beyond.

    `beyond` is the far end of the ood range, on either side of [lo, hi].
    """
    if ood and rng.random() < 0.5:
        return float(rng.uniform(hi, beyond) if beyond > hi else rng.uniform(beyond, lo))
    return float(rng.uniform(lo, hi))


def _longest_gap(length: int, busy: list[tuple[int, int]]) -> int:
    cursor, best = 0, 0
    for start, end in sorted(busy):
        best = max(best, start - cursor)
        cursor = max(cursor, end)
    return max(best, length - cursor)


class HabitsPerson:
    """One person of the "habits" family; keeps habits and novelty as the month goes by."""

    def __init__(self, split: str, index: int, seed: int = 0) -> None:
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; choose one of: {', '.join(SPLITS)}")
        if index < 0 or not 0 <= seed < 1000:
            raise ValueError("index must be >= 0 and seed in 0..999")
        self.split, self.index = split, index
        self.seed = SPLIT_BASE[split] + seed * 1_000_000 + index
        ood = split == "ood"
        rng = np.random.default_rng([FAMILY_KEY, self.seed, 0])

        lo, hi = TRAIN_PROFILE
        base = rng.uniform(lo, hi, 3)
        if ood:  # one or more axes beyond the training range
            extreme = rng.random(3) < 0.35
            extreme[rng.integers(3)] = True
            far = np.where(rng.random(3) < 0.5, rng.uniform(0.0, lo, 3), rng.uniform(hi, 1.0, 3))
            base = np.where(extreme, far, base)
        self.base = base
        self.drift = np.zeros(3)
        if rng.random() < (0.45 if ood else 0.3):
            axis = int(rng.integers(3))
            amount = rng.uniform(0.25, 0.4) if ood else rng.uniform(0.1, 0.25)
            self.bounds = (0.0, 1.0) if ood else TRAIN_PROFILE
            up = rng.random() < 0.5
            if (self.bounds[1] - base[axis] if up else base[axis] - self.bounds[0]) < amount:
                up = not up  # drift the way there is room for
            self.drift[axis] = amount * (1 if up else -1) / 112
        self.bounds = (0.0, 1.0) if ood else TRAIN_PROFILE
        self.drifts = bool(self.drift.any())

        # How strongly each axis shows in the values of actions, and in the meters.
        self.k_social, self.k_morning, self.k_work = rng.uniform(0.4, 0.8, 3)
        self.m_social, self.m_morning, self.m_work = rng.uniform(0.75, 1.25, 3)
        self.temperature = _ranged(rng, 0.2, 0.4, ood, 0.6)
        self.habit_pull = _ranged(rng, 0.1, 0.5, ood, 0.8)
        self.habit_learn = _ranged(rng, 0.05, 0.2, ood, 0.35)
        self.habit_break = _ranged(rng, 0.03, 0.15, ood, 0.3)
        self.novelty_taste = _ranged(rng, 0.0, 0.4, ood, 0.7)
        self.novelty_tau = float(rng.uniform(6.0, 24.0))
        self.explore_cost = float(rng.uniform(-0.05, 0.1))
        self.trust = float(rng.uniform(-0.1, 0.1))
        self.commitment = float(rng.uniform(0.2, 0.5))
        self.gain = _ranged(rng, 0.8, 1.2, ood, 1.5)
        self.lag = _ranged(rng, 0.15, 0.45, ood, 0.6)
        self.noise = _ranged(rng, 0.008, 0.022, ood, 0.035)
        self.df = _ranged(rng, 3.0, 8.0, ood, 2.1)
        self.shock = _ranged(rng, 0.02, 0.08, ood, 0.15)

        style = rng.random()
        rare, late = style < 0.3, 0.2 <= style < 0.5
        self.p_never = _ranged(rng, 0.3, 0.7, ood, 0.85) if rare else float(rng.uniform(0, 0.1))
        self.p_late = float(rng.uniform(0.6, 1.0)) if late else float(rng.uniform(0.0, 0.1))
        self.max_delay = int(rng.integers(12, 17)) if ood and late and rng.random() < 0.5 else 8
        self.mean_delay = float(rng.uniform(1.5, 4.0))

        self._table, self._table_t = self._taste(self.profile(0)), 0
        self._start = rng.uniform(0.35, 0.8, 5)
        # Habits per (weekend, slot): the action this kind of slot usually goes to, drawn
        # from the person's own tastes at neutral meters, with a personal strength.
        self.habits = rng.uniform(0.0, 0.2, (2, 4, N_ACTIONS))
        neutral = np.full(5, 0.6)
        for weekend in (0, 1):
            for slot in range(4):
                t = (5 * 4 if weekend else 0) + slot
                values = self._values(t, neutral) / 0.25
                weights = np.exp(values - values.max())
                habit = int(rng.choice(N_ACTIONS, p=weights / weights.sum()))
                self.habits[weekend, slot, habit] = rng.uniform(0.4, 0.9)
        self.last = -rng.uniform(1.0, 40.0, N_ACTIONS)
        self.pending = np.zeros(5)
        self._effects: np.ndarray | None = None  # by [slot, action], made on first use
        self._memo_key: tuple | None = None
        self._memo = np.zeros(N_ACTIONS)

        self.has_calendar = rng.random() < 0.4
        self._cal: dict[int, SlotCalendar] = {}
        if self.has_calendar:
            self._weekly: dict[tuple[int, int], tuple[int, int]] = {}
            for _ in range(int(rng.integers(1, 5))):
                day, slot = int(rng.integers(7)), int(rng.integers(3))
                self._weekly[(day, slot)] = (
                    int(rng.choice(CAL_EVENTS[slot])),
                    int(rng.integers(3, 11)) * GRID,
                )
            self._one_off = float(rng.uniform(0.02, 0.1))
            self._meetings = float(rng.uniform(0.3, 1.5)) if rng.random() < 0.5 else 0.0

    # -- the protocol ----------------------------------------------------------------

    def profile(self, t: int) -> np.ndarray:
        if not self.drifts:
            return self.base.copy()
        lo, hi = self.bounds
        return np.minimum(np.maximum(self.base + self.drift * t, lo), hi)

    def start(self) -> np.ndarray:
        return self._start.copy()

    def calendar(self, t: int) -> SlotCalendar | None:
        if not self.has_calendar:
            return None
        cal = self._cal.get(t)
        if cal is None:
            cal = self._cal[t] = self._make_calendar(t)
        return cal

    def accept_probabilities(
        self, t: int, meters: np.ndarray, cal: SlotCalendar | None
    ) -> np.ndarray:
        meters = np.asarray(meters, dtype=float)
        key = (t, meters.tobytes(), cal)
        if self._memo_key == key:
            return self._memo.copy()
        values, fits, event = self._choice(t, meters, cal)
        if cal is not None and cal.free_minutes < MIN_NEED:
            return np.zeros(N_ACTIONS)
        now = self._now(t, values, fits)
        h, temp = now.habit, self.temperature
        mine = values + self.trust + self.novelty_taste * now.novelty
        # Against each recommendation r: the habit (unless r is it), the scheduled event
        # (unless r is it or it is the habit), and the most tempting new thing not yet
        # among them.
        rivals = np.exp((values[h] - mine) / temp)
        rivals[h] = 0.0
        taken = {h}
        if event is not None and event != h and fits[event]:
            rival = np.exp((values[event] - mine) / temp)
            rival[event] = 0.0
            rivals += rival
            taken.add(event)
        novel = [a for a in now.novel_order if a not in taken]
        if novel:
            rival = np.exp((now.novel[novel[0]] - self.explore_cost - mine) / temp)
            rival[novel[0]] = (
                math.exp((now.novel[novel[1]] - self.explore_cost - mine[novel[0]]) / temp)
                if len(novel) > 1
                else 0.0
            )
            rivals += rival
        out = fits / (1.0 + rivals)
        self._memo_key, self._memo, self._memo_choice = key, out, (values, fits, event, now)
        return out.copy()

    def answer(
        self,
        t: int,
        action: int,
        meters: np.ndarray,
        cal: SlotCalendar | None,
        rng: np.random.Generator,
    ) -> Answer:
        p = self.accept_probabilities(t, meters, cal)[action]
        accepted = bool(rng.random() < p)
        if rng.random() < self.p_never:
            return Answer(accepted, None)
        if rng.random() < self.p_late:
            delay = int(rng.geometric(1.0 / self.mean_delay))  # 1, 2, ... slots
            return Answer(accepted, min(delay, self.max_delay))
        return Answer(accepted, 0)

    def advance(
        self,
        t: int,
        meters: np.ndarray,
        action: int,
        accepted: bool,
        rng: np.random.Generator,
    ) -> np.ndarray:
        meters = np.asarray(meters, dtype=float)
        done = action if accepted else self._instead(t, meters, action, rng)
        slot = t % 4
        if done is None:  # a fully booked slot: the calendar's event (or meetings) fills it
            cal = self.calendar(t)
            event = cal.active_event if cal is not None else None
            done = ACTIONS.index(event) if event in ACTIONS else ADMIN
        if self.drifts:
            effect = self._effect(done, slot, self.profile(t)) * self.gain
        else:
            if self._effects is None:
                self._effects = self.gain * np.array(
                    [[self._effect(a, s, self.base) for a in range(N_ACTIONS)] for s in range(4)]
                )
            effect = self._effects[slot, done]
        shown = (1.0 - self.lag) * effect + self.pending
        self.pending = self.lag * effect
        if slot != 3:
            shown += PASSIVE_DAY
        elif done != SLEEP:
            shown += PASSIVE_NIGHT_AWAKE
        # Diminishing returns near the bounds keep the meters inside [0, 1] smoothly.
        room = np.where(shown > 0, 2.0 - 2.0 * meters, 2.0 * meters)
        shown *= np.minimum(room, 1.0)
        shown += np.minimum(np.maximum(self.noise * rng.standard_t(self.df, 5), -0.12), 0.12)
        if slot == 0 and rng.random() < self.shock:  # a bad night
            shown[V] -= rng.uniform(0.08, 0.2)
            shown[C] -= rng.uniform(0.05, 0.15)
        self._learn(t, done)
        self._memo_key = None
        return np.minimum(np.maximum(meters + shown, 0.0), 1.0)

    # -- values and choices ----------------------------------------------------------

    def _values(self, t: int, meters: np.ndarray) -> np.ndarray:
        """What each action is worth to the person at slot t, before habit and novelty."""
        slot = t % 4
        weekend = int((t // 4) % 7 >= 5)
        if self.drifts:
            if self._table_t != t:
                self._table, self._table_t = self._taste(self.profile(t)), t
            table = self._table
        else:
            table = self._table
        return table[weekend, slot] + NEEDS @ np.maximum(0.0, NEED_LEVEL - meters[NEED_METER])

    def _taste(self, prof: np.ndarray) -> np.ndarray:
        """The value of each action by [weekend, slot] for this profile, at ease."""
        s, m, w = prof
        u = BASE.copy()
        social = self.k_social * (2 * s - 1)
        u[..., SOCIAL] += social
        u[..., FAM] += 0.5 * social
        u[..., ME] -= 0.6 * social
        fit = self.k_morning * (2 * m - 1) * np.array(CHRONO)
        for a in (DEEP, LEARN, EXERCISE):
            u[..., a] += fit
        # A morning person wants to be asleep by the night slot; a late one is still up.
        u[:, 3, SLEEP] += 0.6 * self.k_morning * (2 * m - 1)
        work = self.k_work * (2 * w - 1)
        u[..., DEEP] += work
        u[..., ADMIN] += 0.6 * work
        return u

    def _choice(
        self, t: int, meters: np.ndarray, cal: SlotCalendar | None
    ) -> tuple[np.ndarray, np.ndarray, int | None]:
        """Each action's value as an alternative (habit pull included), what fits, the event."""
        slot = t % 4
        weekend = int((t // 4) % 7 >= 5)
        values = self._values(t, meters) + self.habit_pull * self.habits[weekend, slot]
        if cal is None:
            fits = ALL_FIT
            event = None
        else:
            fits = cal.free_minutes >= NEED
            event = ACTIONS.index(cal.active_event) if cal.active_event in ACTIONS else None
            if event is not None:
                values[event] += self.commitment
        return values, fits, event

    def _now(self, t: int, values: np.ndarray, fits: np.ndarray) -> _Now:
        """The habit, the novelty and the most tempting new things at slot t."""
        slot = t % 4
        weekend = int((t // 4) % 7 >= 5)
        row = self.habits[weekend, slot]
        habit = int((row * fits - 1.0 + fits).argmax())  # the strongest habit that fits
        novelty = 1.0 - np.exp((self.last - t) / self.novelty_tau)
        # Something new: the value without the habit's pull, plus the taste for novelty.
        novel = values - self.habit_pull * row + self.novelty_taste * novelty
        order = (novel - 1e6 * ~fits).argsort()[::-1][:4].tolist()
        return _Now(habit, novelty, novel, [a for a in order if fits[a]])

    def _options(
        self, r: int, values: np.ndarray, fits: np.ndarray, event: int | None, now: _Now
    ) -> list[tuple[int, float]]:
        """The alternatives (action, value) when r is recommended; r first."""
        options = [(r, values[r] + self.trust + self.novelty_taste * now.novelty[r])]
        if now.habit != r:
            options.append((now.habit, values[now.habit]))
        if event is not None and event != r and event != now.habit and fits[event]:
            options.append((event, values[event]))
        taken = {o[0] for o in options}
        for a in now.novel_order:
            if a not in taken:
                options.append((a, now.novel[a] - self.explore_cost))
                break
        return options

    def _instead(
        self, t: int, meters: np.ndarray, action: int, rng: np.random.Generator
    ) -> int | None:
        """What the person did after not taking `action`: the habit, the event or the new."""
        cal = self.calendar(t)
        if cal is not None and cal.free_minutes < MIN_NEED:
            return None
        if self._memo_key != (t, meters.tobytes(), cal):
            self.accept_probabilities(t, meters, cal)
        values, fits, event, now = self._memo_choice
        options = self._options(int(action), values, fits, event, now)[1:]
        options = [o for o in options if o[0] != action]
        if not options:
            return int(action) if fits[action] else None
        if len(options) == 1:
            return options[0][0]
        best = max(v for _, v in options)
        weights = [math.exp((v - best) / self.temperature) for _, v in options]
        pick = rng.random() * sum(weights)
        for (a, _), wgt in zip(options, weights, strict=True):
            pick -= wgt
            if pick <= 0:
                return a
        return options[-1][0]

    def _learn(self, t: int, done: int) -> None:
        slot = t % 4
        weekend = int((t // 4) % 7 >= 5)
        row = self.habits[weekend, slot]
        habit = int(row.argmax())
        if habit != done:
            row[habit] *= 1.0 - self.habit_break
        row *= 0.995
        row[done] += self.habit_learn * (1.0 - row[done])
        self.last[done] = t

    # -- meters ----------------------------------------------------------------------

    def _effect(self, a: int, slot: int, prof: np.ndarray) -> np.ndarray:
        s, m, w = prof
        e = EFFECT[a].copy() if not (a == SLEEP and slot == 3) else NIGHT_SLEEP.copy()
        if a == SOCIAL:
            e[V] += 0.09 * self.m_social * (2 * s - 1)
            e[SE] += 0.05 * self.m_social * (2 * s - 1)
        elif a == FAM:
            e[V] += 0.05 * self.m_social * (2 * s - 1)
        elif a == ME:
            e[V] += 0.05 * self.m_social * (1 - 2 * s)
            e[SE] += 0.03 * self.m_social * (1 - 2 * s)
        elif a in (DEEP, LEARN, EXERCISE):
            fit = self.m_morning * (2 * m - 1) * CHRONO[slot]
            if a == DEEP:
                e[P] *= 1.0 + 0.5 * fit
                e[C] += 0.03 * fit
            elif a == LEARN:
                e[C] += 0.03 * fit
                e[P] *= 1.0 + 0.4 * fit
            else:
                e[V] += 0.04 * fit
        if a == DEEP:
            e[V] += 0.07 * self.m_work * (2 * w - 1)
            e[SE] += 0.04 * self.m_work * (2 * w - 1)
        elif a == ADMIN:
            e[V] += 0.035 * self.m_work * (2 * w - 1)
            e[SE] += 0.02 * self.m_work * (2 * w - 1)
        return e

    # -- calendar --------------------------------------------------------------------

    def _make_calendar(self, t: int) -> SlotCalendar:
        rng = np.random.default_rng([FAMILY_KEY, self.seed, 1, t])
        day, slot = (t // 4) % 7, t % 4
        length = SLOT_MINUTES[slot]
        busy: list[tuple[int, int, int]] = []  # (start, end, action)
        weekly = self._weekly.get((day, slot))
        if weekly is not None:
            action, dur = weekly
            start = GRID * int(rng.integers(0, (length - dur) // GRID + 1))
            busy.append((start, start + dur, action))
        if CAL_EVENTS[slot] and rng.random() < self._one_off:
            dur = int(rng.integers(2, 17)) * GRID
            start = GRID * int(rng.integers(0, (length - dur) // GRID + 1))
            busy.append((start, start + dur, int(rng.choice(CAL_EVENTS[slot]))))
        if day < 5 and slot < 2 and self._meetings:
            for _ in range(int(rng.poisson(self._meetings))):
                dur = int(rng.choice((30, 45, 60)))
                lo = 180 if slot == 0 else 0  # meetings from 08:00
                start = lo + GRID * int(rng.integers(0, (length - lo - dur) // GRID + 1))
                busy.append((start, start + dur, ADMIN))
        if not busy:
            return SlotCalendar(free_minutes=length, active_event=None)
        longest = max(busy, key=lambda b: b[1] - b[0])
        free = _longest_gap(length, [(b[0], b[1]) for b in busy])
        return SlotCalendar(free_minutes=free, active_event=ACTIONS[longest[2]])


class _Now(NamedTuple):
    habit: int
    novelty: np.ndarray
    novel: np.ndarray
    novel_order: list[int]


class HabitsFamily:
    name = "habits"

    def person(self, split: str, index: int, seed: int = 0) -> HabitsPerson:
        return HabitsPerson(split, index, seed)


FAMILY = HabitsFamily()
