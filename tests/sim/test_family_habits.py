"""The "habits" family of simulated people (bridge/sim/families/habits.py).

Checks the protocol of bridge/sim/family.py (determinism, splits, ranges, calendar,
answers that come late or never, drift) and, statistically over many people, that S, M
and W act in their fixed directions both on the answers and on the meter changes.
"""

from __future__ import annotations

import numpy as np
import pytest

from bridge.sim.families import family
from bridge.sim.family import SPLITS, Answer
from mappings.actions import ACTIONS

FAMILY = family("habits")
DEEP, LEARN, EXERCISE, MEDITATE, SOCIAL, ME, SLEEP = (
    ACTIONS.index(a)
    for a in ("DEEP_WORK", "LEARN", "EXERCISE", "MEDITATE", "SOCIALIZE", "ME_TIME", "SLEEP")
)
V, C, P = 0, 1, 2
NEUTRAL = np.full(5, 0.6)


def corr(x: list[float] | np.ndarray, y: list[float] | np.ndarray) -> float:
    return float(np.corrcoef(x, y)[0, 1])


def live(person, slots: int, policy: str, seed: int = 0) -> tuple[list[float], list[Answer]]:
    """A month of `person` with a random or an oracle recommender: meters and answers."""
    answers = np.random.default_rng([person.seed, 1])
    noise = np.random.default_rng([person.seed, 2])
    pick = np.random.default_rng([person.seed, 3, seed])
    meters = person.start()
    trail, said = [meters.tolist()], []
    for t in range(slots):
        cal = person.calendar(t)
        probs = person.accept_probabilities(t, meters, cal)
        assert probs.shape == (10,) and ((probs >= 0) & (probs <= 1)).all()
        if cal is not None and not cal.available():
            meters = person.advance(t, meters, SLEEP, False, noise)
            trail.append(meters.tolist())
            continue
        if policy == "oracle":
            a = int(np.argmax(probs))
        else:
            a = int(pick.choice([ACTIONS.index(x) for x in (cal.available() if cal else ACTIONS)]))
        ans = person.answer(t, a, meters, cal, answers)
        said.append(ans)
        meters = person.advance(t, meters, a, ans.accepted, noise)
        trail.append(meters.tolist())
    return trail, said


def test_registry_names_the_family() -> None:
    assert FAMILY.name == "habits"
    with pytest.raises(ValueError, match="split"):
        FAMILY.person("test", 0)


def test_same_arguments_same_person_and_same_month() -> None:
    for split in SPLITS:
        a, b = FAMILY.person(split, 7, seed=3), FAMILY.person(split, 7, seed=3)
        assert a.seed == b.seed
        assert np.array_equal(a.profile(50), b.profile(50))
        assert np.array_equal(a.start(), b.start())
        assert [a.calendar(t) for t in range(40)] == [b.calendar(t) for t in range(40)]
        assert live(a, 40, "random") == live(b, 40, "random")
    other = FAMILY.person("train", 8, seed=3)
    assert not np.array_equal(other.profile(0), FAMILY.person("train", 7, seed=3).profile(0))
    assert not np.array_equal(
        FAMILY.person("train", 7, seed=4).profile(0), FAMILY.person("train", 7, seed=3).profile(0)
    )


def test_splits_hold_disjoint_people_and_train_matches_in() -> None:
    seeds = {
        split: {FAMILY.person(split, i, seed=s).seed for i in range(60) for s in (0, 1, 99)}
        for split in SPLITS
    }
    assert all(len(v) == 180 for v in seeds.values())
    assert not (seeds["train"] & seeds["in"] or seeds["train"] & seeds["ood"])
    assert not seeds["in"] & seeds["ood"]
    train = np.array([FAMILY.person("train", i, seed=0).profile(0) for i in range(200)])
    held = np.array([FAMILY.person("in", i, seed=0).profile(0) for i in range(200)])
    # The same distribution: uniform on [0.1, 0.9] per axis, means near 0.5 for both.
    assert np.abs(train.mean(0) - held.mean(0)).max() < 0.06
    assert train.min() >= 0.1 and held.min() >= 0.1 and max(train.max(), held.max()) <= 0.9


def test_ood_people_lie_outside_the_training_ranges() -> None:
    def outside(p: np.ndarray) -> bool:
        return bool(((p < 0.1) | (p > 0.9)).any())

    ood = [FAMILY.person("ood", i) for i in range(200)]
    assert all(outside(p.profile(0)) for p in ood)
    for split in ("train", "in"):
        people = [FAMILY.person(split, i) for i in range(200)]
        assert not any(outside(p.profile(t)) for p in people for t in (0, 60, 111))
    train = [FAMILY.person("train", i) for i in range(200)]
    for name in ("temperature", "habit_pull", "novelty_taste", "lag", "shock", "p_never"):
        assert max(getattr(p, name) for p in ood) > max(getattr(p, name) for p in train), name
    assert min(p.df for p in ood) < min(p.df for p in train)  # heavier tails


def test_meters_probabilities_and_profiles_stay_in_range_with_realistic_steps() -> None:
    steps = []
    for split in SPLITS:
        for i in range(12):
            person = FAMILY.person(split, i)
            trail, _ = live(person, 112, "random")
            meters = np.array(trail)
            assert ((meters >= 0) & (meters <= 1)).all()
            assert all(
                ((person.profile(t) >= 0) & (person.profile(t) <= 1)).all() for t in (0, 111)
            )
            steps.append(np.abs(np.diff(meters, axis=0)))
    steps = np.concatenate(steps)
    assert 0.01 < steps.mean() < 0.06  # a few hundredths per slot on average
    assert steps.max() < 0.45 and np.quantile(steps, 0.99) < 0.2


def test_oracle_recommender_clearly_beats_random() -> None:
    rates = {"random": [], "oracle": []}
    for i in range(40):
        for policy in rates:
            _, said = live(FAMILY.person("in", i), 56, policy)
            rates[policy].append(np.mean([a.accepted for a in said]))
    random, oracle = np.mean(rates["random"]), np.mean(rates["oracle"])
    assert 0.1 < random < 0.35
    assert 0.55 < oracle < 0.85
    assert oracle - random > 0.3


def _answers_at_ease(person) -> list[np.ndarray]:
    """P(accept) of each action on a Monday, slot by slot, at neutral meters, no calendar."""
    return [person.accept_probabilities(t, NEUTRAL, None) for t in range(4)]


def _forced_change(person, action: int, slots: list[int], meter: int) -> float:
    """Mean change of `meter` when the person does `action` in each of `slots`, from 0.6."""
    rng = np.random.default_rng([person.seed, 5])
    return float(
        np.mean([person.advance(t, NEUTRAL, action, True, rng)[meter] - 0.6 for t in slots])
    )


PEOPLE = [FAMILY.person("train", i) for i in range(150)]


def test_social_axis_shows_in_answers_and_in_vitality() -> None:
    s = [p.profile(0)[0] for p in PEOPLE]
    evening_socialize = [_answers_at_ease(p)[2][SOCIAL] for p in PEOPLE]
    evening_me_time = [_answers_at_ease(p)[2][ME] for p in PEOPLE]
    assert corr(s, evening_socialize) > 0.5
    assert corr(s, evening_me_time) < -0.3
    fresh = [FAMILY.person("train", i) for i in range(150)]
    vitality = [_forced_change(p, SOCIAL, [4 * k + 2 for k in range(6)], V) for p in fresh]
    assert corr(s, vitality) > 0.7
    # High S: socializing lifts Vitality; low S: it drains it.
    s, vitality = np.array(s), np.array(vitality)
    assert vitality[s > 0.7].mean() > 0 > vitality[s < 0.3].mean()


def test_morning_axis_shows_in_answers_and_in_focused_work() -> None:
    m = [p.profile(0)[1] for p in PEOPLE]
    focus = []
    for p in PEOPLE:
        morning, _, evening, _ = _answers_at_ease(p)
        focus.append(np.mean([morning[a] - evening[a] for a in (DEEP, LEARN, EXERCISE)]))
    assert corr(m, focus) > 0.5
    night_sleep = [_answers_at_ease(p)[3][SLEEP] for p in PEOPLE]
    assert corr(m, night_sleep) > 0.3  # a morning person takes the night's sleep
    progress = []
    for i in range(150):
        mornings = _forced_change(FAMILY.person("train", i), DEEP, [0, 4, 8, 12], P)
        evenings = _forced_change(FAMILY.person("train", i), DEEP, [2, 6, 10, 14], P)
        progress.append(mornings - evenings)
    assert corr(m, progress) > 0.7


def test_work_axis_shows_in_answers_and_in_vitality() -> None:
    w = [p.profile(0)[2] for p in PEOPLE]
    accepted = [np.mean([_answers_at_ease(p)[slot][DEEP] for slot in (0, 1)]) for p in PEOPLE]
    assert corr(w, accepted) > 0.5
    fresh = [FAMILY.person("train", i) for i in range(150)]
    vitality = [_forced_change(p, DEEP, [4 * k + 1 for k in range(6)], V) for p in fresh]
    assert corr(w, vitality) > 0.7
    w, vitality = np.array(w), np.array(vitality)
    assert vitality[w > 0.7].mean() > vitality[w < 0.3].mean() + 0.05


def test_some_people_answer_late_or_never_and_the_meters_still_move() -> None:
    never, late, prompt = [], [], []
    for i in range(80):
        person = FAMILY.person("train", i)
        rng = np.random.default_rng([i, 6])
        said = [person.answer(t, ME, NEUTRAL, None, rng) for t in range(100)]
        assert all(a.delay is None or 0 <= a.delay <= 8 for a in said)
        share_never = np.mean([a.delay is None for a in said])
        share_late = np.mean([a.delay is not None and a.delay > 0 for a in said])
        (never if share_never > 0.25 else late if share_late > 0.4 else prompt).append(share_never)
    assert len(never) >= 10 and len(late) >= 8 and len(prompt) >= 25
    assert 0.3 < np.mean(never) < 0.6 and max(never) < 0.85  # rare answerers: 30-70 % never
    delays = [
        a.delay
        for i in range(200)
        for a in [FAMILY.person("ood", i).answer(0, ME, NEUTRAL, None, np.random.default_rng(i))]
        if a.delay
    ]
    assert delays and max(delays) <= 16
    # Whatever the answer, advancing the slot moves the meters.
    person = FAMILY.person("train", 0)
    after = person.advance(0, NEUTRAL, SOCIAL, False, np.random.default_rng(1))
    assert not np.allclose(after, NEUTRAL)


def test_drift_moves_the_profile_and_what_the_person_shows() -> None:
    drifting = [p for p in (FAMILY.person("train", i) for i in range(200)) if p.drifts]
    assert 30 <= len(drifting) <= 90
    change_s, change_v = [], []
    for p in drifting:
        before, after = p.profile(0), p.profile(111)
        assert np.abs(after - before).max() > 0.05
        assert ((after >= 0.1) & (after <= 0.9)).all()
        if p.drift[0] != 0:  # drift in S: socializing reads differently late in the month
            early = FAMILY.person("train", p.index)
            late = FAMILY.person("train", p.index)
            v_early = early.advance(2, NEUTRAL, SOCIAL, True, np.random.default_rng(0))[V]
            v_late = late.advance(86, NEUTRAL, SOCIAL, True, np.random.default_rng(0))[V]
            change_s.append(after[0] - before[0])
            change_v.append(v_late - v_early)
    assert len(change_s) >= 5
    assert all(np.sign(ds) == np.sign(dv) for ds, dv in zip(change_s, change_v, strict=True))
    steady = [p for p in PEOPLE if not p.drifts]
    assert all(np.array_equal(p.profile(0), p.profile(111)) for p in steady)


def test_calendar_none_for_many_and_no_room_means_no_acceptance() -> None:
    people = [FAMILY.person("train", i) for i in range(120)]
    with_cal = [p for p in people if p.calendar(0) is not None]
    assert 25 <= len(with_cal) <= 75
    blocked = 0
    for p in with_cal:
        for t in range(112):
            cal = p.calendar(t)
            probs = p.accept_probabilities(t, NEUTRAL, cal)
            for a, name in enumerate(ACTIONS):
                if not cal.fits(name):
                    blocked += 1
                    assert probs[a] == 0.0
                    assert not p.answer(t, a, NEUTRAL, cal, np.random.default_rng(t)).accepted
    assert blocked > 100  # the calendars leave no room for something now and then
    events = {p.calendar(t).active_event for p in with_cal for t in range(112)}
    assert {"ADMIN_WORK", None} <= events and len(events) >= 4


def test_habits_strengthen_with_repetition_and_weaken_when_broken() -> None:
    gained, lost = [], []
    for i in range(60):
        person = FAMILY.person("in", i)
        rng = np.random.default_rng(i)
        before = person.accept_probabilities(28, NEUTRAL, None)  # a Monday morning
        old = int(np.argmax(person.habits[0, 0]))
        new = LEARN if old != LEARN else EXERCISE
        for day in range(5):  # a week of weekday mornings spent on something new
            person.advance(4 * day, NEUTRAL, new, True, rng)
        after = person.accept_probabilities(28, NEUTRAL, None)
        gained.append(after[new] - before[new])
        lost.append(after[old] - before[old])
    assert np.mean(gained) > 0.1 and np.mean(np.array(gained) > 0) > 0.8
    assert np.mean(lost) < 0


def test_lag_carries_part_of_an_effect_into_the_next_slot() -> None:
    for i in range(30):
        slept, stayed_up = FAMILY.person("train", i), FAMILY.person("train", i)
        # Same luck for both; only the night differs.
        for person, night in ((slept, SLEEP), (stayed_up, ME)):
            person.advance(3, NEUTRAL, night, True, np.random.default_rng(i))
        a = slept.advance(4, NEUTRAL, ME, True, np.random.default_rng([i, 1]))
        b = stayed_up.advance(4, NEUTRAL, ME, True, np.random.default_rng([i, 1]))
        assert a[V] > b[V] + 0.01  # the morning after still shows part of the sleep


def test_bad_nights_and_heavy_tails() -> None:
    drops, residuals = [], []
    for i in range(60):
        person = FAMILY.person("train", i)
        rng = np.random.default_rng([i, 7])
        for day in range(28):
            after = person.advance(4 * day, NEUTRAL, MEDITATE, True, rng)
            drops.append(after[V] - 0.6)
        # MEDITATE leaves Progress alone: what moves it in the afternoon is the noise.
        moves = np.array(
            [person.advance(t, NEUTRAL, MEDITATE, True, rng)[P] for t in range(1, 448, 4)]
        )
        residuals.extend((moves - np.median(moves)) / moves.std())
    drops = np.array(drops)
    assert 0.01 < np.mean(drops < -0.08) < 0.15  # the odd bad night, not every week
    residuals = np.array(residuals)
    kurtosis = np.mean(residuals**4) / np.mean(residuals**2) ** 2
    assert kurtosis > 3.5  # heavier tails than a normal distribution (3), per person
