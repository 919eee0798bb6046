"""The "shifts" family: people whose calendar decides what they can do, and when.

Written independently of the other families and of the bundled model (issue 22). What
makes it structurally different: availability is driven by a working pattern, the body
runs on a daily rhythm, and how hard an action hits depends on how long ago the person
last slept or rested.

Working patterns (own calendar generator, minutes from 05:00; slots 05-12, 12-17, 17-22,
22-05 as the pipeline's default boundaries):
- office: Monday-Friday 09:00-17:00 "on duty"; a meeting load (0.5-6 per day, 30-90 min on
  the quarter hour, labelled ADMIN_WORK), a chance of a half-day workshop, self-booked
  focus blocks (DEEP_WORK); evenings and weekends hold the odd dinner, class or visit.
- shift: a rota of weeks (early 06-14, late 14-22, night 22-06, or early/late only), five
  shift days then two off at a person-specific offset, 30 minutes' commute each side; the
  shift is on the calendar (ADMIN_WORK) and a night shift spills into the next morning.
  A late week leaves no evening, a night week no night (those slots fit nothing).
- parent: school run 07:15-08:45 and pick-up 15:00-16:00 on school days, dinner/bath/
  bedtime 17:30-20:00 most evenings, family blocks on weekends (all FAMILY_TIME), part-time
  work 09:00-15:00 with a few meetings, and night wake-ups for some (a baby or a toddler).
- freelancer: no duty hours; client calls scattered 08:00-19:00, some days a 3-6 hour
  deadline block (DEEP_WORK), also on weekends now and then.
- split (only in "ood"): a split-shift worker (buses, kitchens): 06:00-10:00 and
  16:00-20:00 six days a week.
`calendar(t)` gives the longest free stretch of slot t and the event with the most minutes
in it; many slots are partly booked, and some actions do not fit.

Acceptance: a logistic on a utility, times feasibility, plus noise that grows with load:
    desire = context[slot] (+ duty shift) + profile terms + needs (meters, fatigue)
             + the planned event (doing what is already on the calendar is easy)
    p_core = sigmoid(beta * (desire + bias)) * room * (1 - 0.45 * load)
    p      = fits * ((1 - eps) * p_core + eps * reflex * room),  eps = eps0 + eps1 * load
`room` = 1 - 0.6 exp(-(free - need) / 40) is how comfortably the action fits (0 if it
does not), `load` the share of the person's day that is booked, `bias` a per-person
global offset (some people like being told what to do, some do not), `reflex` what they
tap without thinking. So a busy day or a short window makes any suggestion less welcome
and answers noisier, whatever the profile.

Meter dynamics, per slot: homeostasis toward a per-person baseline, a circadian rhythm on
Vitality and Cognition (amplitude per person, phase set by M), then the done action's
effect, the wear of time awake (Vitality and Cognition, more when tired), Serenity lost to
a crowded day (0.04 x load), then Gaussian noise; meters clipped to [0, 1]. The effect is
a function of the profile, of alertness (the rhythm's value in that slot) and of fatigue
f, which grows with the slots since the person last slept (time constant 3-6 slots) and,
less, since they last rested (ME_TIME, MEDITATE): gains are scaled by (1 - 0.5 f), costs
by (1 + 0.8 f), all by a per-person sensitivity (0.7-1.3: how strongly this person's
devices show anything), and SLEEP restores more the more tired they are. A slot whose
recommendation was ignored (or that got none) is filled by habit: the planned event, work
while on duty, sleep at night or after a night shift, otherwise an evening or free-time
habit led by S and M.

How each axis acts (the directions of bridge/sim/family.py hold):
- S: answers: SOCIALIZE +2.4 (S - 0.5), FAMILY_TIME +1.2 (S - 0.5), ME_TIME -1.6 (S - 0.5)
  on the utility; meters: SOCIALIZE moves Vitality by 0.13 tanh(2.2 (S - 0.45)) and
  Serenity by 0.06 tanh(2.2 (S - 0.5)), FAMILY_TIME Vitality by 0.06 tanh(2.2 (S - 0.4)),
  ME_TIME restores more Vitality and Serenity the lower S; low-S people's evening habit is
  time alone.
- M: alertness = cos(2 pi (hour - peak) / 24), peak = 08:00 + 13 h (1 - M) (a morning
  person peaks in the morning slot, a late type in the evening). Answers: DEEP_WORK
  +1.3 alertness, LEARN +1.0, EXERCISE +0.9, ADMIN_WORK +0.5; meters: DEEP_WORK and LEARN
  earn more Progress and cost less Cognition when alert, EXERCISE gives more Vitality, and
  Vitality and Cognition rise and fall through the day with the rhythm.
- W: answers: DEEP_WORK +2.2 (W - 0.5), ADMIN_WORK +1.3 (W - 0.5), LEARN +0.6 (W - 0.5),
  BINGE_WATCH -0.7 (W - 0.5); meters: DEEP_WORK moves Vitality by -0.06 + 0.10 W^1.3 and
  Serenity by -0.04 + 0.06 W, ADMIN_WORK Vitality by -0.04 + 0.06 W (a shift counts as
  work too).

Answering habits: an answer is late (1-3 slots) more often on busy days and during shifts,
and some answers never come (a per-person rate, 0-8 %); the meters show what was done.
Drift: about a third of the people have W drifting linearly by 0.1-0.25 per four weeks
(a project that grips them or wears them down); `profile(t)` follows it.

Splits: "train" and "in" draw from one distribution (profile values in [0.1, 0.9], drift
kept inside it) with disjoint seeds. "ood" has one or two axes in [0, 0.07] or
[0.93, 1] and the others anywhere in [0, 1], the split-shift pattern, and for about half
the people a bias beyond +-1.0, more answer noise with load, noisier meters or more
unanswered recommendations than training ever shows (and for some a sensitivity outside
0.7-1.3).

Measured over 200 people x 112 interactions (slots with no room skipped): a recommender
picking at random among the actions that fit is accepted 0.33 (train) / 0.33 (in) / 0.32
(ood), the oracle (argmax of `accept_probabilities`) 0.61 / 0.61 / 0.55. Across people,
S correlates 0.95 with SOCIALIZE's Vitality change and 0.63 with its P(accept); M 0.97
with focused actions' P(accept) morning minus evening and 0.79 with DEEP_WORK/LEARN's
Progress gain morning minus evening; W 0.85 with DEEP_WORK's Vitality change and 0.62
with its P(accept). tests/sim/test_family_shifts.py holds the thresholds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from bridge.sim.calendar import SlotCalendar
from bridge.sim.family import SPLITS, Answer
from mappings.actions import ACTIONS
from mappings.free_windows import DEFAULT_MIN_MINUTES

TAG = 2203  # in every seed of this family, so no other family shares a random stream
SPLIT_CODE = {"train": 0, "in": 1, "ood": 2}
MAX_INDEX = 1_000_000

DW, AW, LE, EX, MD, FT, SO, MT, SL, BW = range(10)
V, C, P, SE, CO = range(5)
WORK = (DW, AW)
NEED = np.array([DEFAULT_MIN_MINUTES[a] for a in ACTIONS], dtype=float)

# Slots in minutes from midnight of the day they start on (night runs to 05:00 next day).
SLOT_START = (300, 720, 1020, 1320)
SLOT_END = (720, 1020, 1320, 1740)
SLOT_HOUR = (8.5, 14.5, 19.5, 25.5)  # the middle of each slot
DAY_END = 1740
WAKING_MINUTES = 900.0  # a day whose booked minutes reach this is fully loaded

# How welcome each action is in each slot before the person is considered (rows: slots).
CONTEXT = np.array(
    [
        [0.3, 0.2, 0.0, 0.2, 0.1, -0.3, -0.9, -0.3, -1.2, -1.4],
        [0.2, 0.3, 0.0, 0.0, -0.2, -0.2, -0.3, -0.2, -1.6, -0.9],
        [-0.6, -0.5, 0.0, 0.0, 0.1, 0.6, 0.5, 0.4, -1.0, 0.5],
        [-1.6, -1.6, -1.0, -1.8, -0.3, -1.0, -0.6, -0.2, 1.4, -0.2],
    ]
)
# While on duty, work is expected and leisure is awkward.
DUTY = np.array([0.6, 0.6, -0.2, -0.7, -0.2, -0.9, -0.9, -0.9, -1.2, -1.2])


def _vec(**weights: float) -> np.ndarray:
    out = np.zeros(len(ACTIONS))
    for name, value in weights.items():
        out[ACTIONS.index(name)] = value
    return out


# How each axis moves the utility: S and W as (value - 0.5), M through alertness.
S_TERM = _vec(SOCIALIZE=2.4, FAMILY_TIME=1.2, ME_TIME=-1.6, MEDITATE=-0.5)
M_TERM = _vec(DEEP_WORK=1.3, LEARN=1.0, EXERCISE=0.9, ADMIN_WORK=0.5)
W_TERM = _vec(DEEP_WORK=2.2, ADMIN_WORK=1.3, LEARN=0.6, BINGE_WATCH=-0.7)
FATIGUE_TERM = _vec(DEEP_WORK=-1.2, LEARN=-1.0, EXERCISE=-0.6, SLEEP=1.5)
# Needs: a low meter makes what restores it welcome (linear in the meters: N @ m + n0).
NEEDS = np.zeros((len(ACTIONS), 5))
NEEDS[SL, V], NEEDS[EX, V] = -3.0, 0.8
NEEDS[MT, SE], NEEDS[MD, SE] = -1.5, -1.2
NEEDS[SO, CO], NEEDS[FT, CO] = -1.5, -1.5
NEEDS[DW, P], NEEDS[AW, P] = -1.2, -1.2
NEEDS0 = _vec(
    SLEEP=1.5, EXERCISE=-0.32, ME_TIME=0.75, MEDITATE=0.6, SOCIALIZE=0.675,
    FAMILY_TIME=0.675, DEEP_WORK=0.6, ADMIN_WORK=0.6,
)  # fmt: skip
NO_CALENDAR = np.ones(len(ACTIONS))
INDEX = {name: i for i, name in enumerate(ACTIONS)}


@lru_cache(maxsize=2048)
def _room(free_minutes: int) -> np.ndarray:
    """How comfortably each action fits a free stretch: 0 if it does not, 0.4 just, ~1 easily."""
    spare = free_minutes - NEED
    room = np.where(spare >= 0, 1.0 - 0.6 * np.exp(-np.maximum(spare, 0) / 40.0), 0.0)
    room.setflags(write=False)
    return room


PATTERNS = ("office", "shift", "parent", "freelancer", "split")
TRAIN_WEIGHTS = (0.35, 0.25, 0.2, 0.2, 0.0)
OOD_WEIGHTS = (0.2, 0.2, 0.15, 0.15, 0.3)
MEETING_LENGTHS = (30, 30, 45, 60, 60, 90)
SHIFT_HOURS = {"early": (330, 870), "late": (810, 1350), "night": (1290, 1830)}
ROTAS = (("early", "late", "night"), ("early", "late"), ("night", "early", "late"))
# What an evening or weekend event is, by slot.
OFF_WORK = ((EX, FT, LE), (SO, FT, EX), (FT, SO, EX, LE))

Interval = tuple[int, int, int]  # start, end (minutes of the day), action index


@dataclass(frozen=True)
class Traits:
    """Everything about a person that does not change: profile, pattern and nuisances."""

    base: tuple[float, float, float]  # S, M, W at slot 0
    drift_w: float  # change of W per 112 slots
    w_range: tuple[float, float]  # W stays inside it while drifting
    pattern: str
    meetings: float  # per working day
    workshop: float  # chance a working half-day is one long block
    events: float  # chance of an evening/weekend event
    rota: tuple[str, ...]
    rota_offset: int
    day_off: int  # first of two days off (shift, split)
    wakeups: float  # chance of a night wake-up (parents)
    bias: float
    beta: float
    eps0: float
    eps1: float
    reflex: float
    never: float
    late: float
    tau_sleep: float
    tau_rest: float
    kappa: float
    baseline: tuple[float, float, float, float, float]
    amp_v: float
    amp_c: float
    sigma: float
    sensitivity: float  # how strongly actions show in this person's meters


def _alert(hour: float, m: float) -> float:
    peak = 8.0 + 13.0 * (1.0 - m)
    return math.cos(2.0 * math.pi * (hour - peak) / 24.0)


def _draw_traits(rng: np.random.Generator, split: str) -> Traits:
    ood = split == "ood"
    base = rng.uniform(0.1, 0.9, 3)
    extreme: set[int] = set()
    if ood:
        extreme = {int(i) for i in rng.choice(3, size=int(rng.integers(1, 3)), replace=False)}
        for i in range(3):
            if i in extreme:
                base[i] = rng.uniform(0.0, 0.07) if rng.random() < 0.5 else rng.uniform(0.93, 1.0)
            else:
                base[i] = rng.uniform(0.0, 1.0)
    w_range = (0.0, 1.0) if ood else (0.1, 0.9)
    drift = 0.0
    if rng.random() < 0.33 and 2 not in extreme:
        drift = float(rng.uniform(0.1, 0.25) * rng.choice((-1.0, 1.0)))
    pattern = PATTERNS[int(rng.choice(5, p=OOD_WEIGHTS if ood else TRAIN_WEIGHTS))]
    if pattern in ("parent", "freelancer"):
        meetings = rng.uniform(0.5, 3.0)
    else:
        meetings = rng.uniform(0.5, 6.0)
    # Nuisances; in "ood" each of these leaves the training range for about half the people.
    bias = rng.uniform(-1.0, 1.0)
    eps1 = rng.uniform(0.1, 0.3)
    sigma = rng.uniform(0.006, 0.015)
    never = rng.uniform(0.0, 0.08)
    sensitivity = rng.uniform(0.7, 1.3)
    if ood:
        if rng.random() < 0.5:
            bias = rng.uniform(1.1, 1.8) * rng.choice((-1.0, 1.0))
        if rng.random() < 0.5:
            eps1 = rng.uniform(0.3, 0.45)
        if rng.random() < 0.5:
            sigma = rng.uniform(0.015, 0.025)
        if rng.random() < 0.5:
            never = rng.uniform(0.08, 0.2)
        if rng.random() < 0.3:
            sensitivity = rng.uniform(0.45, 0.7) if rng.random() < 0.5 else rng.uniform(1.3, 1.6)
    return Traits(
        base=(float(base[0]), float(base[1]), float(base[2])),
        drift_w=drift,
        w_range=w_range,
        pattern=pattern,
        meetings=float(meetings),
        workshop=float(rng.uniform(0.0, 0.15)),
        events=float(rng.uniform(0.1, 0.4)),
        rota=ROTAS[int(rng.integers(0, len(ROTAS)))],
        rota_offset=int(rng.integers(0, 3)),
        day_off=int(rng.integers(0, 7)),
        wakeups=float(rng.uniform(0.0, 0.5)),
        bias=float(bias),
        beta=float(rng.uniform(0.8, 1.4)),
        eps0=float(rng.uniform(0.02, 0.1)),
        eps1=float(eps1),
        reflex=float(rng.uniform(0.1, 0.5)),
        never=float(never),
        late=float(rng.uniform(0.0, 0.25)),
        tau_sleep=float(rng.uniform(3.0, 6.0)),
        tau_rest=float(rng.uniform(2.0, 5.0)),
        kappa=float(rng.uniform(0.04, 0.1)),
        baseline=(
            float(rng.uniform(0.45, 0.65)),
            float(rng.uniform(0.45, 0.65)),
            float(rng.uniform(0.3, 0.5)),
            float(rng.uniform(0.45, 0.65)),
            float(rng.uniform(0.35, 0.55)),
        ),
        amp_v=float(rng.uniform(0.01, 0.03)),
        amp_c=float(rng.uniform(0.02, 0.05)),
        sigma=float(sigma),
        sensitivity=float(sensitivity),
    )


@dataclass(frozen=True)
class Slot:
    """One slot of the person's own calendar, with what the person knows beyond it."""

    cal: SlotCalendar
    load: float  # booked share of that day
    duty: bool  # expected at work
    after_night: bool  # a morning right after a shift that ran through the night


def _longest_gap(lo: int, hi: int, busy: list[Interval]) -> tuple[int, int | None, int]:
    """Longest free stretch in [lo, hi), the action with most booked minutes, booked minutes."""
    spans = sorted((max(lo, s), min(hi, e), a) for s, e, a in busy if s < hi and e > lo)
    cursor, best, booked = lo, 0, 0
    most: dict[int, int] = {}
    for s, e, a in spans:
        if s > cursor:
            best = max(best, s - cursor)
        if e > cursor:
            booked += e - max(s, cursor)
        cursor = max(cursor, e)
        most[a] = most.get(a, 0) + e - s
    best = max(best, hi - cursor)
    active = max(most, key=lambda k: most[k]) if most else None
    return best, active, booked


@dataclass
class _Plan:
    """One day's events and duty flags, drawn in order from the day's own generator."""

    rng: np.random.Generator
    traits: Traits
    day: int
    busy: list[Interval] = field(default_factory=list)
    duty: list[bool] = field(default_factory=lambda: [False] * 4)

    @property
    def weekday(self) -> bool:
        return self.day % 7 < 5

    def meetings(self, lo: int, hi: int, n: int) -> None:
        rng = self.rng
        for _ in range(n):
            dur = int(rng.choice(MEETING_LENGTHS))
            start = lo + 15 * int(rng.integers(0, max(1, (hi - lo - dur) // 15 + 1)))
            self.busy.append((start, min(hi, start + dur), AW))

    def event(self, slot: int, chance: float) -> None:
        rng = self.rng
        if rng.random() < chance:
            lo, hi = SLOT_START[slot], SLOT_END[slot]
            dur = 15 * int(rng.integers(4, 13))
            start = lo + 15 * int(rng.integers(0, (hi - lo - dur) // 15 + 1))
            self.busy.append((start, start + dur, int(rng.choice(OFF_WORK[slot]))))

    def office(self) -> None:
        tr, rng, busy = self.traits, self.rng, self.busy
        if not self.weekday:
            for slot in range(3):
                self.event(slot, tr.events)
            return
        self.duty[0] = self.duty[1] = True
        for lo, hi in ((540, 720), (780, 1020)):
            if rng.random() < tr.workshop:
                busy.append((lo, hi, AW))
        self.meetings(540, 1020, int(rng.poisson(tr.meetings)))
        if rng.random() < 0.3:
            start = 540 + 60 * int(rng.integers(0, 6))
            busy.append((start, start + 120, DW))
        self.event(2, tr.events * 0.6)

    def shift(self, kind: str | None) -> None:
        if kind is None:
            for slot in range(3):
                self.event(slot, self.traits.events)
            return
        lo, hi = SHIFT_HOURS[kind]
        self.busy.append((lo, hi, AW))
        self.duty = [min(hi, SLOT_END[s]) - max(lo, SLOT_START[s]) >= 120 for s in range(4)]
        if self.rng.random() < self.traits.workshop:  # overtime
            self.busy.append((hi, hi + 120, AW))

    def parent(self) -> None:
        tr, rng, busy = self.traits, self.rng, self.busy
        if self.weekday:
            self.duty[0] = self.duty[1] = True
            busy.append((435, 525, FT))
            busy.append((900, 960, FT))
            self.meetings(540, 870, int(rng.poisson(tr.meetings)))
        else:
            if rng.random() < 0.6:
                busy.append((600, 720, FT))
            if rng.random() < 0.5:
                busy.append((900, 1020, FT))
            self.event(1, tr.events * 0.5)
        if rng.random() < 0.85:
            busy.append((1050, 1200, FT))
        if rng.random() < tr.wakeups:
            start = 1380 + 15 * int(rng.integers(0, 16))
            busy.append((start, start + 15 * int(rng.integers(4, 9)), FT))

    def freelancer(self) -> None:
        tr, rng = self.traits, self.rng
        if rng.random() < (0.75 if self.weekday else 0.3):
            self.meetings(480, 1140, int(rng.poisson(tr.meetings)))
            if rng.random() < 0.25:
                start = 420 + 60 * int(rng.integers(0, 12))
                self.busy.append((start, start + 60 * int(rng.integers(3, 7)), DW))
        self.event(2, tr.events)

    def split(self) -> None:
        """Split shifts, six days a week."""
        if self.day % 7 != self.traits.day_off:
            self.busy.append((330, 630, AW))
            self.busy.append((930, 1230, AW))
            self.duty[0] = self.duty[2] = True
        else:
            self.event(1, self.traits.events)


# A pattern's day, drawn; "shift" needs the rota's shift of the day (ShiftsPerson._day_plan).
_PATTERNS = {"office": _Plan.office, "parent": _Plan.parent, "freelancer": _Plan.freelancer}


class ShiftsPerson:
    """One person of the "shifts" family (see the module docstring)."""

    def __init__(self, seed: int, split: str, traits: Traits) -> None:
        self.seed = seed
        self.split = split
        self.traits = traits
        self._days: dict[int, tuple[list[Interval], list[bool]]] = {}
        self._slots: dict[int, Slot] = {}
        self._awake = 1  # slots since they last slept (they slept the night before)
        self._since_rest = 1
        self._tire()
        s, m, w = traits.base
        self._alert = tuple(_alert(h, m) for h in SLOT_HOUR)
        # The part of the utility fixed by slot and duty (W's drift is added per call).
        self._static = np.array(
            [
                [
                    CONTEXT[slot] + duty * DUTY + (s - 0.5) * S_TERM
                    + self._alert[slot] * M_TERM + (w - 0.5) * W_TERM + NEEDS0
                    for duty in (0, 1)
                ]
                for slot in range(4)
            ]
        )  # fmt: skip
        self._baseline = np.array(traits.baseline)
        amp = np.array([traits.amp_v, traits.amp_c, 0.0, 0.0, 0.0])
        self._rhythm = [(self._alert[(k + 1) % 4] - self._alert[k]) * amp for k in range(4)]

    # --- profile -------------------------------------------------------------------

    def _w(self, t: int) -> float:
        w = self.traits.base[2]
        if self.traits.drift_w:
            lo, hi = self.traits.w_range
            w = min(hi, max(lo, w + self.traits.drift_w * t / 112.0))
        return w

    def profile(self, t: int) -> np.ndarray:
        s, m, _ = self.traits.base
        return np.array([s, m, self._w(t)])

    def start(self) -> np.ndarray:
        rng = np.random.default_rng([TAG, self.seed, 1])
        return np.clip(np.array(self.traits.baseline) + rng.normal(0.0, 0.08, 5), 0.15, 0.9)

    # --- calendar ------------------------------------------------------------------

    def _shift_day(self, day: int) -> str | None:
        tr = self.traits
        if (day % 7) in (tr.day_off, (tr.day_off + 1) % 7) or day < 0:
            return None
        return tr.rota[(day // 7 + tr.rota_offset) % len(tr.rota)]

    def _day_plan(self, day: int) -> tuple[list[Interval], list[bool]]:
        """The events generated on `day` (some may run past 05:00 next day) and duty flags."""
        if day in self._days:
            return self._days[day]
        tr = self.traits
        plan = _Plan(np.random.default_rng([TAG, self.seed, 2, day]), tr, day)
        if tr.pattern == "shift":
            plan.shift(self._shift_day(day))
        else:
            _PATTERNS.get(tr.pattern, _Plan.split)(plan)
        self._days[day] = (plan.busy, plan.duty)
        return plan.busy, plan.duty

    def _slot(self, t: int) -> Slot:
        if t in self._slots:
            return self._slots[t]
        day = t // 4
        busy, duty = self._day_plan(day)
        prev, _ = self._day_plan(day - 1) if day > 0 else ([], [])
        spill = [(s - 1440, e - 1440, a) for s, e, a in prev if e > DAY_END]
        if spill and not duty[0] and self.traits.pattern in ("shift", "split"):
            duty = list(duty)
            duty[0] = False  # after a night shift the morning is theirs (to sleep)
        everything = busy + spill
        booked_day = 0
        out = []
        for slot in range(4):
            free, active, booked = _longest_gap(SLOT_START[slot], SLOT_END[slot], everything)
            booked_day += booked
            out.append((free, active))
        load = min(1.0, booked_day / WAKING_MINUTES)
        for slot, (free, active) in enumerate(out):
            cal = SlotCalendar(int(free), ACTIONS[active] if active is not None else None)
            self._slots[4 * day + slot] = Slot(cal, load, duty[slot], slot == 0 and bool(spill))
        return self._slots[t]

    def calendar(self, t: int) -> SlotCalendar | None:
        return self._slot(t).cal

    def load(self, t: int) -> float:
        return self._slot(t).load

    def on_duty(self, t: int) -> bool:
        return self._slot(t).duty

    def after_night_shift(self, t: int) -> bool:
        """Whether slot t is a morning right after a shift that ran through the night."""
        return self._slot(t).after_night

    # --- answers -------------------------------------------------------------------

    def fatigue(self) -> float:
        """0 just after sleep and rest, towards 1 after a long stretch without either."""
        return self._fatigue

    def _tire(self) -> None:
        tr = self.traits
        sleep = 1.0 - math.exp(-self._awake / tr.tau_sleep)
        rest = 1.0 - math.exp(-self._since_rest / tr.tau_rest)
        self._fatigue = 0.75 * sleep + 0.25 * rest

    def _desire(self, t: int, meters: np.ndarray, cal: SlotCalendar | None) -> np.ndarray:
        own = self._slot(t)
        d = self._static[t % 4, int(own.duty)] + NEEDS @ meters
        d += self._fatigue * FATIGUE_TERM
        if self.traits.drift_w:
            d += (self._w(t) - self.traits.base[2]) * W_TERM
        if own.after_night:
            d[SL] += 2.0
        event = cal.active_event if cal is not None else None
        if event is not None:
            d -= 0.3
            d[INDEX[event]] += 1.5
        return d

    def accept_probabilities(
        self, t: int, meters: np.ndarray, cal: SlotCalendar | None
    ) -> np.ndarray:
        tr = self.traits
        load = self._slot(t).load
        core = 1.0 / (1.0 + np.exp(-tr.beta * (self._desire(t, meters, cal) + tr.bias)))
        room = NO_CALENDAR if cal is None else _room(cal.free_minutes)
        eps = min(0.6, tr.eps0 + tr.eps1 * load)
        # (1 - eps) (1 - 0.45 load) + eps reflex <= 1, so p stays in [0, 1].
        return room * ((1.0 - eps) * (1.0 - 0.45 * load) * core + eps * tr.reflex)

    def answer(
        self,
        t: int,
        action: int,
        meters: np.ndarray,
        cal: SlotCalendar | None,
        rng: np.random.Generator,
    ) -> Answer:
        u = rng.random(3)  # always three draws, so every runner meets the same luck
        accepted = bool(u[0] < self.accept_probabilities(t, meters, cal)[action])
        tr = self.traits
        own = self._slot(t)
        if u[1] < tr.never + 0.05 * own.load:
            return Answer(accepted, None)
        late = tr.late + 0.4 * own.load + (0.3 if own.duty else 0.0)
        if u[2] < late:
            return Answer(accepted, 1 + int(3 * u[2] / late) % 3)
        return Answer(accepted, 0)

    # --- meters --------------------------------------------------------------------

    def habit(self, t: int, u: float) -> int:
        """What the person does in slot t when they do not take the recommendation."""
        own = self._slot(t)
        cal = own.cal
        if cal.active_event is not None and cal.free_minutes < 120:
            return INDEX[cal.active_event]
        s, _, _ = self.traits.base
        w = self._w(t)
        slot = t % 4
        if (slot == 3 or self.after_night_shift(t)) and cal.fits("SLEEP"):
            return SL
        if own.duty:
            return DW if u < 0.2 + 0.5 * w and cal.fits("DEEP_WORK") else AW
        if cal.active_event is not None:
            return INDEX[cal.active_event]
        if slot == 2:
            if u < 0.1 + 0.5 * s:
                return FT if self.traits.pattern == "parent" or u < 0.15 else SO
            return BW if u < 0.75 else MT
        if slot == 3:
            return MT
        if u < 0.25 * self._alert[slot] + 0.1 and cal.fits("EXERCISE"):
            return EX
        return MT if u < 0.5 + 0.3 * (1.0 - s) else FT

    def _effect(self, t: int, action: int) -> list[float]:
        """What doing `action` in slot t does to the five meters, before noise."""
        s, _, _ = self.traits.base
        w = self._w(t)
        al = self._alert[t % 4]
        f = self._fatigue
        if action == SL:
            # Sleep restores more the more tired they are; fatigue does not blunt it.
            k = self.traits.sensitivity
            return [k * (0.03 + 0.12 * f), k * (0.03 + 0.08 * f), 0.0, k * 0.03, -0.01 * k]
        if action == DW:
            e = [-0.06 + 0.10 * w**1.3, -0.05 + 0.03 * al, 0.10 * (0.7 + 0.3 * al),
                 -0.04 + 0.06 * w, 0.0]  # fmt: skip
        elif action == AW:
            e = [-0.04 + 0.06 * w, -0.03 + 0.015 * al, 0.06, -0.04 + 0.04 * w, 0.01]
        elif action == LE:
            e = [-0.02, -0.02 + 0.03 * al, 0.05 * (0.7 + 0.3 * al), 0.01, 0.0]
        elif action == EX:
            e = [0.05 + 0.04 * al, 0.02, 0.0, 0.04, 0.0]
        elif action == MD:
            e = [0.02, 0.03, 0.0, 0.08, 0.0]
        elif action == FT:
            e = [0.02 + 0.06 * math.tanh(2.2 * (s - 0.4)), 0.0, 0.0, 0.04, 0.08]
        elif action == SO:
            e = [0.13 * math.tanh(2.2 * (s - 0.45)), -0.01, 0.0,
                 0.06 * math.tanh(2.2 * (s - 0.5)), 0.12]  # fmt: skip
        elif action == MT:
            e = [0.06 * (1.0 - s) ** 1.5 - 0.01, 0.02, 0.0, 0.02 + 0.05 * (1.0 - s), -0.02]
        else:  # BINGE_WATCH
            e = [0.01, -0.03, -0.01, 0.02, -0.01]
        k = self.traits.sensitivity
        gain, cost = k * (1.0 - 0.5 * f), k * (1.0 + 0.8 * f)
        return [x * gain if x > 0 else x * cost for x in e]

    def advance(
        self,
        t: int,
        meters: np.ndarray,
        action: int,
        accepted: bool,
        rng: np.random.Generator,
    ) -> np.ndarray:
        tr = self.traits
        noise = rng.normal(0.0, tr.sigma, 5)
        done = action if accepted else self.habit(t, float(rng.random()))
        x = meters + tr.kappa * (self._baseline - meters) + self._rhythm[t % 4]
        x += self._effect(t, done)
        if done != SL:
            # Time awake wears on body and mind, faster the longer since sleep or rest.
            x[V] -= 0.025 * (0.5 + self._fatigue)
            x[C] -= 0.02 * (0.5 + self._fatigue)
        x[SE] -= 0.04 * self._slot(t).load  # a crowded day frays the nerves
        x += noise
        if done == SL:
            self._awake, self._since_rest = 0, 0
        else:
            self._awake += 1
            self._since_rest = 0 if done in (MT, MD) else self._since_rest + 1
        self._tire()
        return np.minimum(np.maximum(x, 0.0), 1.0)


class ShiftsFamily:
    name = "shifts"

    def person(self, split: str, index: int, seed: int = 0) -> ShiftsPerson:
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; choose one of: {', '.join(SPLITS)}")
        if not 0 <= index < MAX_INDEX:
            raise ValueError(f"person index {index} out of range 0..{MAX_INDEX - 1}")
        code = SPLIT_CODE[split]
        person_seed = (3 * seed + code) * MAX_INDEX + index  # unique per (split, index, seed)
        rng = np.random.default_rng([TAG, code, seed, index])
        return ShiftsPerson(person_seed, split, _draw_traits(rng, split))


FAMILY = ShiftsFamily()
