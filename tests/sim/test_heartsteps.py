"""The HeartSteps replay: real people's answers predicted before they are seen. Small
trials written here in the trial's own columns (a person whose answers flip mid-study, one
who never answers, a late answer), and the real 19 people when ../shared has them."""

from __future__ import annotations

import csv
import json
import math
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bridge.cli.main import app
from bridge.runner.base import STATED
from bridge.runner.bundled import BundledRunner
from bridge.sim.heartsteps import (
    RUNNERS,
    OnlineLogistic,
    ProductRunner,
    evaluate,
    features,
    load,
    replay,
)
from mappings.actions import ACTIONS
from tests.shared import DATASETS, missing_reason

COLUMNS = (
    "user.index",
    "sugg.decision.utime",
    "sugg.decision.slot",
    "sugg.response.utime",
    "avail",
    "send",
    "send.active",
    "send.sedentary",
    "response",
    "dec.location.category",
    "dec.weather.condition",
    "dec.temperature",
    "jbsteps30pre",
    "jbsteps30",
)
T0 = datetime(2015, 7, 22, 9, 30)
EXERCISE = ACTIONS.index("EXERCISE")


def _stamp(t: datetime) -> str:
    return f"{t.year}/{t.month}/{t.day} {t.hour:02d}:{t.minute:02d}"


def _rows(person: str, answer, days: int = 42, late: bool = False):
    for day in range(days):
        for slot in range(1, 6):
            at = T0 + timedelta(days=day, hours=3 * (slot - 1))
            response = answer(day, slot)
            answered = at + timedelta(hours=4 if late else 0, minutes=10)
            yield {
                "user.index": person,
                "sugg.decision.utime": _stamp(at),
                "sugg.decision.slot": str(slot),
                "sugg.response.utime": _stamp(answered) if response in ("good", "bad") else "",
                "avail": "TRUE",
                "send": "TRUE",
                "send.active": "TRUE" if slot % 2 else "FALSE",
                "send.sedentary": "FALSE" if slot % 2 else "TRUE",
                "response": response,
                "dec.location.category": "home" if slot < 3 else "work",
                "dec.weather.condition": "Clear" if day % 3 else "Rain",
                "dec.temperature": "" if day % 5 == 0 else "18.5",
                "jbsteps30pre": "" if slot == 5 else str(100 * slot),
                "jbsteps30": str(300 if response == "good" else 120),
            }


def _trial(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "suggestions.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        # A person who likes the suggestions for three weeks, then turns against them.
        writer.writerows(_rows("1", lambda d, s: "good" if d < 21 else "bad"))
        writer.writerows(_rows("3", lambda d, s: ""))  # never answers
        writer.writerows(_rows("5", lambda d, s: "good" if s in (1, 2) else "bad", late=True))
        writer.writerows(_rows("7", lambda d, s: "good" if (d + s) % 3 else "no_response"))
    return folder


def test_a_person_whose_answers_flip_is_followed_and_nothing_is_nan(tmp_path: Path) -> None:
    people = load(_trial(tmp_path / "trial"))
    assert [p.name for p in people] == ["1", "3", "5", "7"]
    flip = people[0]
    learner = OnlineLogistic(features(flip.decisions[0]) * 0, 1.0)
    preds = replay(flip, learner)
    assert len(preds) == 42 * 5
    before_flip = [q.p for q in preds if q.week == 2]
    end = [q.p for q in preds if q.week == 5]
    assert min(before_flip[-5:]) > 0.7 and max(end[-5:]) < 0.3
    report = evaluate(people)
    for row in report["people"]:
        for scores in row["runners"].values():
            assert all(v is None or math.isfinite(v) for k, v in scores.items() if k != "n"), row
    assert set(report["runners"]) == set(RUNNERS)
    # The product's runners follow the flip too, each at its own pace.
    for name, drop in (("bundled", 0.2), ("transfer", 0.5)):
        preds = replay(flip, ProductRunner(name))
        at = {q.week: q.p for q in preds}  # the last prediction of each week
        assert at[5] < at[2] - drop, (name, at)


def test_the_bundled_runner_is_corrected_on_what_it_stated_before_each_answer(
    tmp_path: Path,
) -> None:
    flip = load(_trial(tmp_path / "trial"))[0]
    shipped, bare = ProductRunner("bundled"), ProductRunner("bundled", sd=0.0)
    preds = replay(flip, shipped)
    uncorrected = replay(flip, bare)
    history = shipped.history
    assert len(preds) == 42 * 5 and len(history) == len(preds) - 1  # the last answer: after
    # Each answer comes 10 minutes after its point, the next point 3 h later: the j-th
    # point was predicted from exactly the j answers before it. What the item carries is
    # the runner's own P(accept) then, not what its posterior says after the answer (or at
    # the end), and not the corrected P it stated.
    runner = BundledRunner()
    final = runner.predict({"slot": history[0]["slot"]}, history, corrected=False)[EXERCISE]
    for j in (0, 1, 40, 104, 150, 208):
        then = runner.predict({"slot": history[j]["slot"]}, history[:j], corrected=False)
        # (float32 sums read in another order: equal to 1e-6)
        assert history[j][STATED] == pytest.approx(float(then[EXERCISE]), abs=1e-6), j
        after = runner.predict({"slot": history[j]["slot"]}, history[: j + 1], corrected=False)
        assert abs(history[j][STATED] - float(after[EXERCISE])) > 1e-4, j
        assert history[j][STATED] == pytest.approx(uncorrected[j].p, abs=1e-6), j
    assert history[104][STATED] > final + 0.2  # before the flip, it said yes was likely
    # The uncorrected replay's items carry the same stated P: the correction changes none.
    assert [h[STATED] for h in bare.history] == pytest.approx([h[STATED] for h in history])
    # Corrected, the flip is followed further than the offset grid reaches.
    end = {q.week: q.p for q in preds}
    end_bare = {q.week: q.p for q in uncorrected}
    assert end[5] < end_bare[5] - 0.05, (end, end_bare)


def test_a_person_who_never_answers_has_nothing_to_predict_when_only_ratings_count(
    tmp_path: Path,
) -> None:
    people = load(_trial(tmp_path / "trial"), coding="rated")
    silent = next(p for p in people if p.name == "3")
    assert all(d.accepted is None for d in silent.decisions)
    report = evaluate(people)
    row = next(r for r in report["people"] if r["person"] == "3")
    assert row["runners"] == {}
    # Under the main coding the same silence is 210 Ignores, predicted as such in the end.
    ignore = evaluate(load(_trial(tmp_path / "again")))
    silent_row = next(r for r in ignore["people"] if r["person"] == "3")
    assert silent_row["runners"]["transfer"]["n"] == 210
    assert silent_row["runners"]["transfer"]["logloss"] < 0.2


def test_a_late_answer_is_learnt_only_after_the_points_it_missed(tmp_path: Path) -> None:
    people = load(_trial(tmp_path / "trial"))
    late = next(p for p in people if p.name == "5")

    class Recorder:
        def __init__(self) -> None:
            self.seen = 0
            self.at_predict: list[int] = []

        def predict(self, _x):
            self.at_predict.append(self.seen)
            return 0.5

        def update(self, _x, _y):
            self.seen += 1

    recorder = Recorder()
    replay(late, recorder)
    # Answers come 4 h 10 min after their point, points are 3 h apart: the second point is
    # predicted before the first answer arrives, the third after it.
    assert recorder.at_predict[:3] == [0, 0, 1]


def test_the_command_prints_the_documented_json_and_refuses_a_missing_folder(
    tmp_path: Path,
) -> None:
    folder = _trial(tmp_path / "trial")
    result = CliRunner().invoke(app, ["eval", "--heartsteps", str(folder), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["default_runner"] in doc["runners"]
    for name, scores in doc["runners"].items():
        assert {"logloss", "ece", "steps_ips"} <= set(scores), name
    person = doc["people"][0]
    assert {"n", "logloss", "brier", "auc"} <= set(person["runners"]["pooled"])
    missing = CliRunner().invoke(app, ["eval", "--heartsteps", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2
    assert missing.output.count("\n") == 1 and "suggestions.csv" in missing.output


def test_on_the_trials_people_the_default_beats_the_pooled_model() -> None:
    folder = DATASETS / "heartsteps"
    if not (folder / "suggestions.csv").exists():
        pytest.skip(missing_reason(folder))
    people = load(folder)[:8]  # a part of the 19, so the suite stays quick
    report = evaluate(people, runners=("pooled", "transfer"))
    mean = report["mean_person_logloss"]
    assert mean["transfer"] < mean["pooled"]
    assert report["runners"]["transfer"]["ece"] <= 0.08
