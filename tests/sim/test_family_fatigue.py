"""The "fatigue" family of simulated people (bridge.sim.families.fatigue).

What the protocol promises (bridge.sim.family) is checked by measuring people: same
arguments, same person; disjoint splits; "ood" outside the training ranges; S, M and W
acting in their documented direction on answers and on meters, over many people; an
oracle well above a random recommender; late and missing answers; drift; the calendar.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from bridge.runner.base import Recommendation
from bridge.sim.calendar import SlotCalendar
from bridge.sim.episode import run_episode
from bridge.sim.families import family
from bridge.sim.families import fatigue as fam
from bridge.sim.family import Answer
from mappings.actions import ACTIONS

FAMILY = fam.FAMILY
DEEP, ADMIN, LEARN = (ACTIONS.index(a) for a in ("DEEP_WORK", "ADMIN_WORK", "LEARN"))
SOCIAL, ME_TIME, SLEEP = (ACTIONS.index(a) for a in ("SOCIALIZE", "ME_TIME", "SLEEP"))
V, C = 0, 1
NEUTRAL = np.full(5, 0.55)
MONDAY, WEDNESDAY = 0, 2  # days of week 0 (slots 0-3) and 2 (slots 8-11)


def episode(person, policy: str, slots: int = 112):
    """Run `person` like an episode runner would; (accepted, answers, meters, asked) per slot."""
    answers = np.random.default_rng([person.seed, 1])
    noise = np.random.default_rng([person.seed, 2])
    choose = np.random.default_rng([person.seed, 9])
    meters = person.start()
    out: list[tuple[bool, Answer, np.ndarray, int]] = []
    t = -1
    while len(out) < slots:
        t += 1
        cal = person.calendar(t)
        if cal is not None and not cal.available():
            meters = person.advance(t, meters, 0, False, noise)
            continue
        p = person.accept_probabilities(t, meters, cal)
        a = int(choose.integers(0, 10)) if policy == "random" else int(np.argmax(p))
        ans = person.answer(t, a, meters, cal, answers)
        meters = person.advance(t, meters, a, ans.accepted, noise)
        out.append((ans.accepted, ans, meters, a))
    return out


def probe(person, t: int, action: int, meters: np.ndarray = NEUTRAL, seed: int = 0):
    """The meter change if `person` (a copy: state untouched) does `action` at slot t."""
    p = copy.deepcopy(person)
    after = p.advance(t, meters, action, True, np.random.default_rng([person.seed, seed, 7]))
    return after - meters


def corr(x, y) -> float:
    return float(np.corrcoef(np.asarray(x, float), np.asarray(y, float))[0, 1])


@pytest.fixture(scope="module")
def people():
    return [FAMILY.person("in", i) for i in range(300)]


def test_registered_under_its_name():
    assert family("fatigue") is FAMILY
    assert FAMILY.name == "fatigue"
    with pytest.raises(ValueError, match="split"):
        FAMILY.person("test", 0)


def test_same_arguments_same_person_and_same_luck():
    a, b = FAMILY.person("train", 7, seed=3), FAMILY.person("train", 7, seed=3)
    ea, eb = episode(a, "random", 60), episode(b, "random", 60)
    assert a.seed == b.seed
    assert [x[0] for x in ea] == [x[0] for x in eb]
    assert all(np.array_equal(x[2], y[2]) for x, y in zip(ea, eb, strict=True))
    assert all(np.array_equal(a.profile(t), b.profile(t)) for t in range(0, 112, 5))
    assert [a.calendar(t) for t in range(112)] == [b.calendar(t) for t in range(112)]
    # Asking for the profile late first, then early, gives the same path (drift is lazy).
    c = FAMILY.person("train", 7, seed=3)
    assert np.array_equal(c.profile(111), a.profile(111))
    other = FAMILY.person("train", 8, seed=3)
    assert not np.array_equal(other.profile(0), a.profile(0))


def test_splits_hold_different_people():
    seeds = {
        split: {FAMILY.person(split, i, s).seed for i in range(200) for s in range(3)}
        for split in ("train", "in", "ood")
    }
    assert all(len(v) == 600 for v in seeds.values())
    assert not seeds["train"] & seeds["in"]
    assert not seeds["train"] & seeds["ood"]
    assert not seeds["in"] & seeds["ood"]
    train = {tuple(FAMILY.person("train", i).base) for i in range(200)}
    held = {tuple(FAMILY.person("in", i).base) for i in range(200)}
    assert not train & held


def test_train_and_in_share_one_distribution():
    def summary(split):
        ps = [FAMILY.person(split, i) for i in range(400)]
        return np.array([[*p.base, *(p.params[k] for k in fam.NUISANCE)] for p in ps])

    train, held = summary("train"), summary("in")
    spread = train.std(axis=0)
    # Means within 4 standard errors: same distribution, different draws.
    assert (np.abs(train.mean(axis=0) - held.mean(axis=0)) < 4 * spread / np.sqrt(400)).all()
    assert not np.array_equal(train, held)


def test_every_ood_person_is_outside_the_training_ranges():
    train = [FAMILY.person("train", i) for i in range(400)]
    # The ranges as training actually sees them: the profile at every slot, every nuisance.
    prof = np.array([p.profile(t) for p in train for t in range(0, 112, 4)])
    lo, hi = prof.min(axis=0), prof.max(axis=0)
    nuis = {k: [p.params[k] for p in train] for k in fam.NUISANCE}
    extreme_axes = 0
    for i in range(200):
        p = FAMILY.person("ood", i)
        path = np.array([p.profile(t) for t in range(0, 112, 4)])
        axis_out = ((path < lo) | (path > hi)).all(axis=0).any()  # outside all episode long
        nuisance_out = any(not min(v) <= p.params[k] <= max(v) for k, v in nuis.items())
        assert axis_out or nuisance_out, f"ood person {i} looks like a training person"
        extreme_axes += bool(axis_out)
    assert extreme_axes > 100  # most have an extreme axis, not only an odd nuisance


def test_values_stay_in_range_and_no_room_means_no(people):
    seen_zero = 0
    for person in people[:30]:
        noise = np.random.default_rng([person.seed, 2])
        choose = np.random.default_rng(person.seed)
        meters = person.start()
        for t in range(112):
            cal = person.calendar(t)
            p = person.accept_probabilities(t, meters, cal)
            assert ((p >= 0) & (p <= 1)).all()
            assert ((person.profile(t) >= 0) & (person.profile(t) <= 1)).all()
            if cal is not None:
                no_room = [a for a in range(10) if not cal.fits(ACTIONS[a])]
                assert (p[no_room] == 0).all()
                seen_zero += len(no_room)
            a = int(choose.integers(0, 10))
            before = meters
            meters = person.advance(t, meters, a, bool(choose.random() < p[a]), noise)
            assert ((meters >= 0) & (meters <= 1)).all()
            assert np.abs(meters - before).max() < 0.35  # a slot moves a meter modestly
    assert seen_zero > 100  # the calendar did take room away


def test_s_acts_on_meters_and_answers(people):
    s = [p.profile(8)[0] for p in people]
    evening = 4 * WEDNESDAY + 2
    social_v = [probe(p, evening, SOCIAL)[V] for p in people]
    me_time_v = [probe(p, evening, ME_TIME)[V] for p in people]
    social_yes = [p.accept_probabilities(evening, NEUTRAL, None)[SOCIAL] for p in people]
    assert corr(s, social_v) > 0.6
    assert corr(s, me_time_v) < -0.3
    assert corr(s, social_yes) > 0.5
    # The magnitudes a slot should have: a few hundredths up to about 0.2.
    assert 0.03 < np.mean(np.abs(social_v)) < 0.2


def test_m_acts_on_meters_and_answers(people):
    m = [p.profile(8)[1] for p in people]
    morning, evening = 4 * WEDNESDAY, 4 * WEDNESDAY + 2
    cog = [probe(p, morning, LEARN)[C] - probe(p, evening, LEARN)[C] for p in people]
    yes = [
        p.accept_probabilities(morning, NEUTRAL, None)[DEEP]
        - p.accept_probabilities(evening, NEUTRAL, None)[DEEP]
        for p in people
    ]
    assert corr(m, cog) > 0.5
    assert corr(m, yes) > 0.5


def test_late_hours_suit_a_morning_person_badly(people):
    m = [p.profile(8)[1] for p in people]
    night = 4 * WEDNESDAY + 3
    up_late = [probe(p, night, ME_TIME)[V] for p in people]
    yes = [p.accept_probabilities(night, NEUTRAL, None)[ME_TIME] for p in people]
    assert corr(m, up_late) < -0.3
    assert corr(m, yes) < -0.3


def test_w_acts_on_meters_and_answers(people):
    w = [p.profile(8)[2] for p in people]
    afternoon = 4 * WEDNESDAY + 1
    deep_v = [probe(p, afternoon, DEEP)[V] for p in people]
    yes = [p.accept_probabilities(afternoon, NEUTRAL, None)[DEEP] for p in people]
    assert corr(w, deep_v) > 0.5
    assert corr(w, yes) > 0.5


def test_axes_show_in_real_episodes(people):
    """Same directions from what a runner sees: answers and meter changes in episodes."""
    rows = []
    for person in people[:80]:
        meters = person.start()
        noise = np.random.default_rng([person.seed, 2])
        answers = np.random.default_rng([person.seed, 1])
        deep_yes, deep_dv = [], []
        for t in range(112):
            cal = person.calendar(t)
            if t % 4 == 3 or (cal is not None and not cal.fits("DEEP_WORK")):
                meters = person.advance(t, meters, SLEEP, True, noise)
                continue
            ans = person.answer(t, DEEP, meters, cal, answers)
            after = person.advance(t, meters, DEEP, ans.accepted, noise)
            deep_yes.append(ans.accepted)
            if ans.accepted:
                deep_dv.append(after[V] - meters[V])
            meters = after
        if deep_dv:
            rows.append((person.profile(56)[2], np.mean(deep_yes), np.mean(deep_dv)))
    w, yes, dv = np.array(rows).T
    assert corr(w, yes) > 0.4
    assert corr(w, dv) > 0.4


def test_an_oracle_beats_a_random_recommender_clearly():
    rates = {}
    for policy in ("random", "oracle"):
        rates[policy] = np.mean(
            [np.mean([x[0] for x in episode(FAMILY.person("in", i), policy)]) for i in range(40)]
        )
    assert 0.1 < rates["random"] < 0.35
    assert 0.55 < rates["oracle"] < 0.9
    assert rates["oracle"] - rates["random"] > 0.35


def test_answers_match_the_probabilities_and_come_late_or_never():
    person = FAMILY.person("in", 11)
    rng = np.random.default_rng(5)
    t, meters = 4 * WEDNESDAY + 1, NEUTRAL
    p = person.accept_probabilities(t, meters, None)
    got = [person.answer(t, ADMIN, meters, None, rng) for _ in range(3000)]
    assert abs(np.mean([a.accepted for a in got]) - p[ADMIN]) < 0.03
    never = np.mean([a.delay is None for a in got])
    assert abs(never - person.params["never"]) < 0.03
    delays = [a.delay for a in got if a.delay is not None]
    late = np.mean([d > 0 for d in delays])
    assert abs(late - person.params["late_share"]) < 0.04
    # Across people: some answer at once, some late, some never.
    kinds = {"now": 0, "late": 0, "never": 0}
    for i in range(60):
        for _, ans, _, _ in episode(FAMILY.person("in", i), "random", 30):
            kinds["never" if ans.delay is None else "late" if ans.delay else "now"] += 1
    assert all(v > 100 for v in kinds.values()), kinds


def test_fatigue_builds_with_effort_and_clears_overnight():
    person = FAMILY.person("in", 4)
    rng = np.random.default_rng(0)
    monday = [person.accept_probabilities(0, NEUTRAL, None)]
    person.advance(0, NEUTRAL, DEEP, True, rng)
    person.advance(1, NEUTRAL, DEEP, True, rng)
    tired = person.accept_probabilities(2, NEUTRAL, None)
    rested = copy.deepcopy(person)
    rested.fatigue = 0.0
    fresh = rested.accept_probabilities(2, NEUTRAL, None)
    assert person.fatigue > 0.2
    assert tired[DEEP] <= fresh[DEEP] and tired[ME_TIME] >= fresh[ME_TIME]
    assert (tired != fresh).any()
    person.advance(2, NEUTRAL, ME_TIME, True, rng)
    evening = person.fatigue
    person.advance(3, NEUTRAL, SLEEP, True, rng)
    assert person.fatigue < 0.5 * evening
    # Over many people: two slots of deep work lower the next slot's wish for it.
    drops = []
    for i in range(100):
        p = FAMILY.person("in", i)
        before = p.accept_probabilities(9, NEUTRAL, None)[LEARN]
        p.advance(8, NEUTRAL, DEEP, True, rng)
        p.advance(9 - 4, NEUTRAL, DEEP, True, rng)  # fatigue is state, any slot adds to it
        drops.append(before - p.accept_probabilities(9, NEUTRAL, None)[LEARN])
    assert np.mean(drops) > 0.05 and min(drops) >= -1e-12
    assert monday[0][SLEEP] < 0.05  # nobody sleeps on a Monday morning


def test_the_same_nudge_again_and_again_wears_out():
    drops = []
    for i in range(100):
        person = FAMILY.person("in", i)
        rng = np.random.default_rng(i)
        t0 = 4 * WEDNESDAY + 1
        first = person.accept_probabilities(t0, NEUTRAL, None)[ME_TIME]
        for t in range(t0, t0 + 3):  # ME_TIME recommended, ignored, three slots running
            person.answer(t, ME_TIME, NEUTRAL, None, rng)
            person.advance(t, NEUTRAL, ME_TIME, False, rng)
            person.fatigue = 0.0  # isolate the nudges from effort
        drops.append(first - person.accept_probabilities(t0 + 4, NEUTRAL, None)[ME_TIME])
    assert np.mean(drops) > 0.05


def test_drift_moves_the_profile_and_the_answers_follow():
    people = [FAMILY.person("train", i) for i in range(300)]
    kinds = {p.drift for p in people}
    assert kinds == {"none", "walk", "step"}
    for p in people:
        moved = np.abs(p.profile(111) - p.profile(0)).max()
        if p.drift == "none":
            assert moved == 0
    walkers = [np.abs(p.profile(111) - p.profile(0)).max() for p in people if p.drift == "walk"]
    assert np.median(walkers) > 0.05
    steps, follow = [], []
    for p in [p for p in people if p.drift == "step"]:
        days = np.array([p.profile(4 * d) for d in range(28)])
        jump = np.abs(np.diff(days, axis=0)).max(axis=1)
        assert 9 <= int(np.argmax(jump)) <= 19  # the life event between day 10 and 20
        steps.append(jump.max())
        # Same weekday, same state, before and after: the answers follow the new truth.
        before, after = 4 * 7 + 1, 4 * 21 + 1
        dw = p.profile(after)[2] - p.profile(before)[2]
        dp = (
            p.accept_probabilities(after, NEUTRAL, None)[DEEP]
            - p.accept_probabilities(before, NEUTRAL, None)[DEEP]
        )
        follow.append((dw, dp))
    assert np.mean(np.array(steps) > 0.1) > 0.7
    dw, dp = np.array(follow).T
    moved = np.abs(dw) > 0.1
    assert moved.sum() > 10 and corr(dw[moved], dp[moved]) > 0.6


def test_calendars_some_people_none_others_busy_weekdays():
    people = [FAMILY.person("in", i) for i in range(200)]
    kinds = [p.calendar(0) is None for p in people]
    assert 0.1 < np.mean(kinds) < 0.4
    busy = free = 0
    for p in people:
        if p.calendar(0) is None:
            continue
        for t in range(112):
            cal = p.calendar(t)
            assert isinstance(cal, SlotCalendar)
            assert 0 <= cal.free_minutes <= fam.SLOT_MINUTES[t % 4]
            day = (t // 4) % 7
            if day < 5 and t % 4 < 2:
                busy += cal.free_minutes < fam.SLOT_MINUTES[t % 4]
            if t % 4 == 3:
                free += cal.free_minutes == fam.SLOT_MINUTES[3]
    assert busy > 2000 and free > 0
    # The scheduled event is welcome: a meeting makes admin work likelier than without it.
    gains = []
    for p in people:
        for t in range(40):
            cal = p.calendar(t)
            if cal is not None and cal.active_event == "ADMIN_WORK" and cal.fits("ADMIN_WORK"):
                blank = SlotCalendar(cal.free_minutes, None)
                gains.append(
                    p.accept_probabilities(t, NEUTRAL, cal)[ADMIN]
                    - p.accept_probabilities(t, NEUTRAL, blank)[ADMIN]
                )
    assert len(gains) > 200 and min(gains) >= 0 and np.mean(gains) > 0.05


class Rotating:
    """A runner that cycles through the actions the slot has room for; no belief."""

    name = "rotating"

    def __init__(self):
        self.n = 0

    def recommend(self, observation, history):
        fits = observation.get("available_actions", ACTIONS)
        self.n += 1
        return Recommendation(fits[self.n % len(fits)], None, "", self.name)


def test_lives_through_the_shared_episode_runner():
    """bridge.sim.episode drives the family: late answers stay open, missing ones expire."""
    late = unanswered = skipped = 0
    for i in range(12):
        person = FAMILY.person("in", i)
        ep = run_episode(Rotating(), person, slots=60)
        assert ep.errors == 0 and len(ep.actions) == 60
        assert not any(ep.overlaps)  # the runner kept to what fits; so did the person
        days = [person.profile(4 * d).tolist() for d in range(60)]
        assert all(truth in days for truth in ep.truths)  # scored against profile(t)
        distinct = len({tuple(x) for x in ep.truths})
        assert distinct == 1 if person.drift == "none" else person.drift == "step" or distinct > 1
        assert all(0 <= x <= 1 for row in ep.meters for x in row)
        responses = [item["response"] for item in ep.history()]
        assert responses.count("expired") == ep.unanswered
        late, unanswered, skipped = late + ep.late, unanswered + ep.unanswered, skipped + ep.skipped
    assert late > 20 and unanswered > 20 and skipped > 0


def test_the_fast_tables_equal_the_written_ones():
    rng = np.random.default_rng(1)
    for _ in range(20):
        s, m, w = rng.uniform(0, 1, 3)
        cs, cm, cw, al = 2 * s - 1, 2 * m - 1, 2 * w - 1, fam._alignment(m)
        assert np.allclose(fam._evaluate(fam.TASTE, s, m, w), fam._taste_rows(cs, cm, cw, al))
        assert np.allclose(fam._evaluate(fam.EFFECTS, s, m, w), fam._effect_rows(cs, cm, cw, al))
