"""Families of simulated people behind one protocol; episodes with late and missing answers;
the strong no-prior learner; calibration of P(accept)."""

import numpy as np
import pytest
from typer.testing import CliRunner

from bridge.cli.main import app
from bridge.runner.bundled import BundledRunner
from bridge.sim.baselines import LinearTSRunner, OracleRunner
from bridge.sim.episode import run_episode
from bridge.sim.evaluate import Lineup, calibration, evaluate, gap_closed
from bridge.sim.families.rhythm import FAMILY as RHYTHM
from bridge.sim.families.rhythm import RhythmFamily
from bridge.sim.family import Answer
from bridge.sim.population import person
from mappings.actions import ACTIONS


class Always:
    name = "always"

    def __init__(self, action):
        self.action = action
        self.seen = []

    def recommend(self, observation, history):
        from bridge.runner.base import Recommendation

        self.seen.append([dict(h) for h in history])
        return Recommendation(self.action, None, "", self.name)


class Throwaway:
    """A deliberately simple family for tests: one welcome action per slot, answers that
    come two slots late (every third one) or never (every fifth); meters move by a fixed
    step for the action done, so what happened can be read back."""

    def __init__(self, seed=0, favourite=("DEEP_WORK", "EXERCISE", "SOCIALIZE", "SLEEP")):
        self.seed = seed
        self.favourite = [ACTIONS.index(a) for a in favourite]
        self.n = 0

    def profile(self, t):
        return np.array([0.2, 0.8, 0.5])

    def start(self):
        return np.full(5, 0.5)

    def calendar(self, t):
        return None

    def accept_probabilities(self, t, meters, cal):
        p = np.full(len(ACTIONS), 0.05)
        p[self.favourite[t % 4]] = 0.95
        return p

    def answer(self, t, action, meters, cal, rng):
        accepted = bool(rng.random() < self.accept_probabilities(t, meters, cal)[action])
        self.n += 1
        delay = None if self.n % 5 == 0 else 2 if self.n % 3 == 0 else 0
        return Answer(accepted, delay)

    def advance(self, t, meters, action, accepted, rng):
        step = np.zeros(5)
        step[0] = 0.01 if accepted else -0.01
        return np.clip(meters + step, 0, 1)


def test_the_rhythm_family_is_the_world_it_wraps():
    p = person("in", 2)
    for runner in (lambda: BundledRunner(), lambda: Always("DEEP_WORK")):
        a = run_episode(runner(), p, 30)
        b = run_episode(runner(), RHYTHM.person("in", 2), 30)
        assert a.accepted == b.accepted and a.meters == b.meters and a.actions == b.actions
        assert a.beliefs == b.beliefs
    with_cal = run_episode(Always("ME_TIME"), p, 30, calendar=True)
    fam = run_episode(Always("ME_TIME"), RhythmFamily(calendars=True).person("in", 2), 30)
    assert with_cal.meters == fam.meters and with_cal.skipped == fam.skipped
    assert fam.truths[0] == list(p.belief)


def test_late_answers_arrive_later_and_missing_ones_stay_expired():
    runner = Always("DEEP_WORK")
    ep = run_episode(runner, Throwaway(), 20)
    final = ep.history()
    # every fifth never answered, every third (not fifth) two slots late
    assert [i for i, h in enumerate(final) if h["response"] == "expired"] == [4, 9, 14, 19]
    assert ep.unanswered == 4 and ep.late == 5
    assert all(h["response"] in ("accepted", "ignored", "expired", None) for h in final)
    # what the runner saw at interaction 3 (index 3): answer 2 (index 2) still pending,
    # then filled in two slots later; the meters moved all the same
    assert runner.seen[3][2]["response"] is None
    assert runner.seen[5][2]["response"] == ("accepted" if ep.accepted[2] else "ignored")
    assert runner.seen[3][2]["meter_deltas"]["vitality"] == pytest.approx(
        0.01 if ep.accepted[2] else -0.01
    )
    # and it is counted as done or not done whatever the answer said
    assert ep.accepted[4] in (True, False) and len(ep.accepted) == 20


def test_the_bundled_runner_reads_a_history_with_pending_answers():
    ep = run_episode(BundledRunner(), Throwaway(), 24)
    assert ep.errors == 0 and all(b is not None for b in ep.beliefs)


def test_the_oracle_reads_the_family_and_the_strong_learner_finds_the_favourites():
    fam = Throwaway()
    oracle = run_episode(OracleRunner(), fam, 40)
    assert oracle.actions[:4] == ["DEEP_WORK", "EXERCISE", "SOCIALIZE", "SLEEP"]
    # With no prior it must explore, but a competent learner finds one welcome action per
    # slot within a few days; the weak per-slot Beta bandit is far slower at 40 slots.
    eps = [run_episode(LinearTSRunner(seed=s), Throwaway(), 112) for s in range(3)]
    late = np.mean([e.accepted[-40:] for e in eps])
    early = np.mean([e.accepted[:8] for e in eps])
    assert late > 0.75 > 0.4 > early


def test_calibration_table_and_brier():
    class Ep:
        def __init__(self, expected, accepted):
            self.expected, self.accepted = expected, accepted

    eps = [Ep([0.05, 0.95, 0.95, None], [False, True, False, True])]
    cal = calibration(eps)
    assert sum(r["n"] for r in cal["reliability"]) == 3 and len(cal["reliability"]) == 10
    assert cal["brier"] == pytest.approx((0.05**2 + 0.05**2 + 0.95**2) / 3, abs=1e-4)
    top = cal["reliability"][9]
    assert top["n"] == 2 and top["observed"] == 0.5 and top["predicted"] == 0.95
    assert calibration([Ep([None], [True])]) is None


def test_eval_reports_calibration_the_strong_learner_and_the_transfer_targets():
    report = evaluate(
        "in", n_people=3, slots=30, lineup=Lineup(("random", "bundled", "linear-ts", "oracle"))
    )
    b = report["runners"]["bundled"]
    assert b["calibration"]["brier"] < b["calibration"]["brier_of_base_rate"] + 0.05
    assert report["runners"]["linear-ts"]["calibration"] is not None
    names = {t["target"] for t in report["targets"]}
    assert {
        "family: belief MAE after 28 <= 0.14",
        "family: acceptance 9-28 closes >= 80% of random->oracle gap",
        "family: at least 3x fewer than linear-ts",
    } <= names
    assert gap_closed(report) is not None


def test_eval_family_flag_checks_its_input():
    runner = CliRunner()
    bad = runner.invoke(app, ["eval", "--family", "nobody", "--people", "1"])
    assert bad.exit_code == 2 and "--family 'nobody'" in bad.stderr
    bad = runner.invoke(app, ["eval", "--family", "habits", "--adapter", "--people", "1"])
    assert bad.exit_code == 2 and "rhythm only" not in bad.stderr and "--adapter" in bad.stderr


def test_the_belief_comes_with_its_posterior_sd_which_shrinks_with_answers():
    runner = BundledRunner()
    before = runner.recommend({"slot": 0}, []).extra["belief_sd"]
    assert len(before) == 3 and all(0.2 < x < 0.35 for x in before)
    ep = run_episode(BundledRunner(), person("in", 5), 112)
    after = runner.recommend({"slot": 0}, ep.history()).extra["belief_sd"]
    assert all(a < b for a, b in zip(after, before, strict=True))
    assert max(after) < 0.15  # a month's answers: sure enough for the page
    assert ep.sds[0] == before and len(ep.sds) == 112


def test_mixture_training_is_reproducible_and_names_its_families(tmp_path):
    import json

    from bridge.sim.train import simulate, train

    a, b = (
        train(tmp_path / f"{x}.npz", seed=3, n_people=12, slots=24, families=("rhythm", "habits"))
        for x in "ab"
    )
    with np.load(a.path) as x, np.load(b.path) as y:
        assert json.loads(str(x["meta"]))["families"] == ["rhythm", "habits"]
        assert all(np.array_equal(x[k], y[k]) for k in ("accept_w", "delta_w", "delta_sd"))
    # the mixture draws people from each family it is given, reproducibly per seed
    one = simulate(6, 8, 1, ("rhythm",))
    two = simulate(6, 8, 1, ("rhythm", "habits"))
    assert not np.array_equal(one["prof"][:48], two["prof"][: len(one["prof"][:48])])


def test_leave_one_family_out_in_ci_size():
    from bridge.sim.lofo import FoldBudget, format_lofo, lofo

    report = lofo(
        ("rhythm", "habits"),
        n_people=3,
        slots=30,
        budget=FoldBudget(train_people=12, train_slots=24, tune_people=2, tune_slots=16),
    )
    assert [f["held_out"] for f in report["folds"]] == ["rhythm", "habits"]
    for fold in report["folds"]:
        assert fold["held_out"] not in fold["trained_on"]
        assert fold["in"]["family"] == fold["ood"]["family"] == fold["held_out"]
        assert fold["in"]["split"] == "in" and fold["ood"]["split"] == "ood"
        assert {"bundled", "linear-ts", "oracle", "random"} <= set(fold["in"]["runners"])
        assert fold["linear_ts_tuning"]  # tuned on the training families only
    assert len(report["summary"]) == 4
    from bridge.sim.plot import lofo_svg

    svg = lofo_svg(report)
    assert svg.startswith("<svg") and svg.count('fill="#d62728"') == 4 + 1  # bundled bars + key
    text = format_lofo(report)
    assert "| habits | ood |" in text and ("[met]" in text or "[MISSED]" in text)


def test_train_and_lofo_options_are_checked():
    runner = CliRunner()
    bad = runner.invoke(app, ["train-model", "--families", "rhythm,nobody", "--people", "10"])
    assert bad.exit_code == 2 and "--families 'rhythm,nobody'" in bad.stderr
    bad = runner.invoke(app, ["eval", "--lofo", "--families", "rhythm"])
    assert bad.exit_code == 2 and "at least two" in bad.stderr
