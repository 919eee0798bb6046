"""The "shifts" family (bridge/sim/families/shifts.py): a person is reproducible, the splits
are what they claim, and each of S, M and W shows in the answers and in the meters in the
direction bridge/sim/family.py fixes, measured over many people and slots."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from bridge.sim.families import family
from bridge.sim.families.shifts import FAMILY, ShiftsPerson
from mappings.actions import ACTIONS, METERS
from mappings.free_windows import DEFAULT_MIN_MINUTES

A = {name: i for i, name in enumerate(ACTIONS)}
V, C, P = (METERS.index(m) for m in ("vitality", "cognition", "progress"))
FOCUSED = [A["DEEP_WORK"], A["LEARN"], A["EXERCISE"]]
NEED = np.array([DEFAULT_MIN_MINUTES[a] for a in ACTIONS])
PEOPLE = 120
SLOTS = 112


@dataclass
class Lived:
    """Per person: the profile at slot 0, and per slot what happened."""

    profile: np.ndarray  # people x 3
    slot: np.ndarray  # people x slots
    action: np.ndarray
    probs: np.ndarray  # people x slots x 10: P(accept) of every action
    fits: np.ndarray  # people x slots x 10
    delta: np.ndarray  # people x slots x 5: meter change after doing `action`
    before: np.ndarray  # people x slots x 5
    load: np.ndarray


def live(split: str, people: int, slots: int, seed: int = 0) -> Lived:
    """Each person does a random action that fits in every slot (a forced month)."""
    shape = (people, slots)
    out = Lived(
        np.zeros((people, 3)),
        np.zeros(shape, int),
        np.full(shape, -1),
        np.zeros((*shape, 10)),
        np.zeros((*shape, 10), bool),
        np.zeros((*shape, 5)),
        np.zeros((*shape, 5)),
        np.zeros(shape),
    )
    for i in range(people):
        person = FAMILY.person(split, i, seed)
        out.profile[i] = person.profile(0)
        meters = person.start()
        choose = np.random.default_rng([i, 9])
        dynamics = np.random.default_rng([i, 10])
        for t in range(slots):
            cal = person.calendar(t)
            fits = cal.free_minutes >= NEED
            out.slot[i, t] = t % 4
            out.fits[i, t] = fits
            out.load[i, t] = person.load(t)
            out.before[i, t] = meters
            if not fits.any():
                meters = person.advance(t, meters, 0, False, dynamics)
                continue
            out.probs[i, t] = person.accept_probabilities(t, meters, cal)
            a = int(choose.choice(np.flatnonzero(fits)))
            after = person.advance(t, meters, a, True, dynamics)
            out.action[i, t] = a
            out.delta[i, t] = after - meters
            meters = after
    return out


@pytest.fixture(scope="module")
def lived() -> Lived:
    return live("train", PEOPLE, SLOTS)


def per_person(values: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mean of `values` over each person's masked slots, and who had any."""
    count = mask.sum(axis=1)
    mean = np.where(mask, values, 0.0).sum(axis=1) / np.maximum(count, 1)
    return mean, count > 0


def corr(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.corrcoef(x, y)[0, 1])


def month(person: ShiftsPerson, slots: int = SLOTS) -> list[tuple[bool, int | None, float]]:
    """A month with a fixed recommendation policy: (accepted, delay, meters sum) per slot."""
    answers = np.random.default_rng([person.seed, 1])
    dynamics = np.random.default_rng([person.seed, 2])
    meters = person.start()
    out = []
    for t in range(slots):
        cal = person.calendar(t)
        a = (3 * t) % 10
        answer = person.answer(t, a, meters, cal, answers)
        meters = person.advance(t, meters, a, answer.accepted, dynamics)
        out.append((answer.accepted, answer.delay, float(meters.sum())))
    return out


def test_the_registry_names_this_family() -> None:
    assert family("shifts") is FAMILY
    assert FAMILY.name == "shifts"
    with pytest.raises(ValueError, match="split"):
        FAMILY.person("test", 0)


def test_same_arguments_same_person_and_same_month() -> None:
    for split in ("train", "ood"):
        a, b = FAMILY.person(split, 7, 3), FAMILY.person(split, 7, 3)
        assert a.seed == b.seed
        assert np.array_equal(a.profile(50), b.profile(50))
        assert np.array_equal(a.start(), b.start())
        assert [a.calendar(t) for t in range(200)] == [b.calendar(t) for t in range(200)]
        assert month(a) == month(b)
    other = FAMILY.person("train", 7, 4)
    assert not np.array_equal(other.profile(0), FAMILY.person("train", 7, 3).profile(0))


def test_a_calendar_slot_asked_out_of_order_is_the_same() -> None:
    forward = FAMILY.person("train", 11)
    backward = FAMILY.person("train", 11)
    cals = [forward.calendar(t) for t in range(120)]
    assert [backward.calendar(t) for t in reversed(range(120))] == cals[::-1]


def test_splits_hold_different_people_from_one_distribution() -> None:
    seeds = {
        split: {FAMILY.person(split, i, s).seed for i in range(150) for s in (0, 1)}
        for split in ("train", "in", "ood")
    }
    assert all(len(v) == 300 for v in seeds.values())
    assert not seeds["train"] & seeds["in"]
    assert not (seeds["train"] | seeds["in"]) & seeds["ood"]
    train = np.array([FAMILY.person("train", i).profile(0) for i in range(400)])
    held = np.array([FAMILY.person("in", i).profile(0) for i in range(400)])
    assert not any(np.array_equal(x, y) for x, y in zip(train, held, strict=True))
    # Same distribution: means and spreads agree within sampling error (se ~ 0.012).
    assert np.abs(train.mean(axis=0) - held.mean(axis=0)).max() < 0.05
    assert np.abs(train.std(axis=0) - held.std(axis=0)).max() < 0.04


def test_ood_people_leave_the_training_ranges() -> None:
    times = range(0, 3 * SLOTS, 7)
    for split in ("train", "in"):
        for i in range(300):
            person = FAMILY.person(split, i)
            values = np.array([person.profile(t) for t in times])
            assert values.min() >= 0.1 and values.max() <= 0.9
            assert abs(person.traits.bias) <= 1.0 and person.traits.pattern != "split"
    patterns, biases = [], []
    for i in range(300):
        person = FAMILY.person("ood", i)
        values = np.array([person.profile(t) for t in times])
        assert values.min() >= 0.0 and values.max() <= 1.0
        # Every ood person is outside the training range on some axis, all month long.
        assert ((values < 0.1) | (values > 0.9)).any(axis=1).all()
        patterns.append(person.traits.pattern)
        biases.append(abs(person.traits.bias))
    assert 0.15 < patterns.count("split") / 300 < 0.45
    assert 0.3 < np.mean(np.array(biases) > 1.0) < 0.7


def test_meters_and_probabilities_stay_in_range_and_zero_where_nothing_fits() -> None:
    data = live("ood", 40, SLOTS, seed=2)
    assert data.before.min() >= 0.0 and data.before.max() <= 1.0
    assert data.probs.min() >= 0.0 and data.probs.max() <= 1.0
    assert (data.probs[~data.fits] == 0.0).all()
    assert data.probs[data.fits].min() > 0.0
    moved = np.abs(data.delta[data.action >= 0])
    # A slot moves a meter by a few hundredths, rarely more than ~0.2.
    assert 0.01 < moved.mean() < 0.06
    assert np.quantile(moved, 0.99) < 0.2


def test_calendars_book_many_slots_partly_so_some_actions_do_not_fit(lived: Lived) -> None:
    some = lived.fits.any(axis=2)
    partly = some & ~lived.fits.all(axis=2)
    assert 0.1 < partly.mean() < 0.6
    assert 0.01 < (~some).mean() < 0.15  # a late or night shift leaves no room at all
    deep = lived.fits[..., A["DEEP_WORK"]]
    assert 0.03 < (~deep).mean() < 0.3


def test_a_shift_worker_loses_evenings_on_late_weeks_and_nights_on_night_weeks() -> None:
    workers = [
        p for p in (FAMILY.person("train", i) for i in range(80)) if p.traits.pattern == "shift"
    ]
    assert len(workers) > 8
    for person in workers:
        for t in range(0, 28 * 4 * 3):
            day = t // 4
            kind = person._shift_day(day)
            cal = person.calendar(t)
            if kind == "late" and t % 4 == 2:
                assert cal.free_minutes == 0 and cal.active_event == "ADMIN_WORK"
            if kind == "night" and t % 4 == 3:
                assert cal.free_minutes == 0
                assert person.calendar(t + 1).free_minutes < 420  # it runs into the morning
                assert person.after_night_shift(t + 1)


def test_social_axis_in_answers_and_meters(lived: Lived) -> None:
    s = lived.profile[:, 0]
    so, me = A["SOCIALIZE"], A["ME_TIME"]
    vit, ok = per_person(lived.delta[..., V], lived.action == so)
    assert ok.mean() > 0.9
    assert corr(s[ok], vit[ok]) > 0.7
    alone, ok2 = per_person(lived.delta[..., V], lived.action == me)
    assert corr(s[ok2], alone[ok2]) < -0.4
    welcome, ok3 = per_person(lived.probs[..., so], lived.fits[..., so])
    assert corr(s[ok3], welcome[ok3]) > 0.4
    rather_alone, _ = per_person(lived.probs[..., me], lived.fits[..., me])
    assert corr(s[ok3], rather_alone[ok3]) < -0.3


def test_morning_axis_in_answers_and_meters(lived: Lived) -> None:
    m = lived.profile[:, 1]
    focused = lived.probs[..., FOCUSED].mean(axis=2)
    room = lived.fits[..., FOCUSED].all(axis=2)
    morning, ok1 = per_person(focused, room & (lived.slot == 0))
    evening, ok2 = per_person(focused, room & (lived.slot == 2))
    ok = ok1 & ok2
    assert corr(m[ok], (morning - evening)[ok]) > 0.6
    work = np.isin(lived.action, [A["DEEP_WORK"], A["LEARN"]])
    gain_m, ok1 = per_person(lived.delta[..., P], work & (lived.slot == 0))
    gain_e, ok2 = per_person(lived.delta[..., P], work & (lived.slot == 2))
    ok = ok1 & ok2
    assert corr(m[ok], (gain_m - gain_e)[ok]) > 0.4
    # The rhythm: a morning person's cognition is higher in the morning than in the evening.
    cog_m, _ = per_person(lived.before[..., C], lived.slot == 0)
    cog_e, _ = per_person(lived.before[..., C], lived.slot == 2)
    assert corr(m, cog_m - cog_e) > 0.3


def test_work_axis_in_answers_and_meters(lived: Lived) -> None:
    w = lived.profile[:, 2]
    dw = A["DEEP_WORK"]
    vit, ok = per_person(lived.delta[..., V], lived.action == dw)
    assert ok.mean() > 0.85
    assert corr(w[ok], vit[ok]) > 0.6
    welcome, ok2 = per_person(lived.probs[..., dw], lived.fits[..., dw])
    assert corr(w[ok2], welcome[ok2]) > 0.4


def test_answers_follow_the_probabilities() -> None:
    person = FAMILY.person("train", 5)
    t = next(t for t in range(40) if person.calendar(t).free_minutes >= 180)
    cal, meters = person.calendar(t), person.start()
    p = person.accept_probabilities(t, meters, cal)
    rng = np.random.default_rng(0)
    for a in (int(np.argmax(p)), int(np.argmin(p + (p == 0)))):
        got = np.mean([person.answer(t, a, meters, cal, rng).accepted for _ in range(3000)])
        assert abs(got - p[a]) < 0.03
    assert np.array_equal(p, person.accept_probabilities(t, meters, cal))  # no state moved
    full = next(t for t in range(400) if person.calendar(t).free_minutes < 45)
    tight = person.calendar(full)
    never = A["DEEP_WORK"]
    assert person.accept_probabilities(full, meters, tight)[never] == 0.0
    assert not any(person.answer(full, never, meters, tight, rng).accepted for _ in range(200))


def test_busy_days_make_answers_later_and_less_telling(lived: Lived) -> None:
    delays: dict[bool, list[int | None]] = {True: [], False: []}
    rng = np.random.default_rng(1)
    for i in range(60):
        person = FAMILY.person("train", i)
        meters = person.start()
        for t in range(0, SLOTS):
            cal = person.calendar(t)
            if cal.free_minutes >= 10:
                busy = person.load(t) > 0.35
                delays[busy].append(person.answer(t, A["MEDITATE"], meters, cal, rng).delay)
    for busy in (True, False):
        share_none = np.mean([d is None for d in delays[busy]])
        assert 0.0 < share_none < 0.2
        assert max(d for d in delays[busy] if d is not None) <= 3
    late = {b: np.mean([d is not None and d > 0 for d in delays[b]]) for b in (True, False)}
    assert late[True] > late[False] + 0.1
    # On a busy day the probabilities spread less between actions: answers say less.
    spread = lived.probs.max(axis=2) - np.where(lived.fits, lived.probs, 1).min(axis=2)
    some = lived.fits.any(axis=2)
    assert spread[some & (lived.load > 0.35)].mean() < spread[some & (lived.load < 0.1)].mean()


def test_drift_moves_the_profile_and_the_answers() -> None:
    agree, drifters = 0, 0
    meters = np.full(5, 0.5)
    for i in range(200):
        person = FAMILY.person("train", i)
        change = person.profile(111)[2] - person.profile(0)[2]
        if abs(change) < 0.05:
            assert person.traits.drift_w == 0.0 or abs(person.profile(111)[2] - 0.5) > 0.35
            continue
        drifters += 1
        assert np.array_equal(person.profile(0)[:2], person.profile(111)[:2])
        early = np.mean([person.accept_probabilities(t, meters, None)[0] for t in range(28)])
        late = np.mean([person.accept_probabilities(t, meters, None)[0] for t in range(84, 112)])
        agree += np.sign(late - early) == np.sign(change)
    assert 0.2 < drifters / 200 < 0.45
    assert agree / drifters > 0.8


def test_a_recommender_that_knows_the_person_is_accepted_far_more_than_random() -> None:
    rates = {}
    for policy in ("random", "oracle"):
        accepted = []
        for i in range(60):
            person = FAMILY.person("in", i)
            meters = person.start()
            answers = np.random.default_rng([person.seed, 1])
            dynamics = np.random.default_rng([person.seed, 2])
            choose = np.random.default_rng([person.seed, 3])
            for t in range(56):
                cal = person.calendar(t)
                fits = np.flatnonzero(cal.free_minutes >= NEED)
                if not len(fits):
                    meters = person.advance(t, meters, 0, False, dynamics)
                    continue
                p = person.accept_probabilities(t, meters, cal)
                a = int(choose.choice(fits)) if policy == "random" else int(np.argmax(p))
                answer = person.answer(t, a, meters, cal, answers)
                meters = person.advance(t, meters, a, answer.accepted, dynamics)
                accepted.append(answer.accepted)
        rates[policy] = float(np.mean(accepted))
    assert 0.2 < rates["random"] < 0.4
    assert 0.5 < rates["oracle"] < 0.75
    assert rates["oracle"] - rates["random"] > 0.2
