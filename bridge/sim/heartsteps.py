"""A replay of the HeartSteps V1 trial: real people's answers to activity suggestions.

HeartSteps V1 (Klasnja et al., Ann Behav Med 2019) sent each person up to five activity
suggestions a day for six weeks, micro-randomized: at an available decision point a
suggestion was sent with probability 0.6, a walking one or an anti-sedentary one with 0.3
each (the paper's design section; here 60 % of available points were sent, 56 % of those
walking). Each person rated a suggestion `good`, `bad` or not at all.

That is the product's loop: a suggestion in context, an answer. Both kinds of suggestion
are EXERCISE among the runner's actions (a walk, or a few minutes standing and moving: the
same body, different effort), told apart by a feature; the five decision slots are kept
(morning to evening). `good` is Accept, `bad` and no answer are Ignore (`coding="rated"`
keeps only the rated ones: good against bad).

Every runner predicts P(accept) for each sent suggestion before its answer, and sees the
answer once it was given (a late answer arrives after the decision points it missed):
the prequential log-loss, Brier and AUC per person, the calibration over everyone, the
log-loss by week of the study, and an inverse-propensity estimate of the steps in the 30
minutes after a decision point under each runner's own choice (send the kind it expects to
be accepted, when that is more likely than not; else nothing).

The runners:
- `person-rate`: each person's own accept rate so far (a Beta(1, 1) prior).
- `pooled`: a logistic model fitted on everyone else (leave one person out), never updated.
- `no-prior`: a per-person Bayesian logistic model with the same Gaussian prior for
  everyone (linear-ts's kind of learner: it knows nothing of other people), updated online.
- `transfer`: the same per-person online model whose prior is the pooled model fitted on
  everyone else, with a prior width chosen on everyone else too (nested leave one person
  out): a hierarchical model, a population prior with per-person effects.
- `runner-transfer`: the product's `transfer` runner (bridge.runner.transfer) as shipped,
  its prior fitted on simulated people only: every suggestion is EXERCISE in the slot the
  decision time falls in (decision points 1-5 -> morning, afternoon, afternoon, evening,
  evening), with no meters (HeartSteps records none) and none of the trial's context. It
  learns the person's own liking of EXERCISE and their readiness to say yes.
- `runner-bundled`: the product's default runner (bridge.runner.bundled, model version 5)
  on the same history: its P(accept) of EXERCISE in the slot, from its posterior over the
  profile and the person's acceptance offset; meters unknown (0.5), no calendar.
The hyperparameters of `no-prior` and `transfer` are chosen per held-out person on the
other people only, from the same small grid, by their prequential log-loss.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bridge.config import RunnerSettings
from bridge.errors import InputError
from bridge.runner.base import STATED
from bridge.runner.online import OnlineLogistic, sigmoid
from mappings.actions import ACTIONS

# The trial's randomization at an available decision point (Klasnja et al. 2019).
P_SEND = {"none": 0.4, "active": 0.3, "sedentary": 0.3}
FEATURES = (
    "bias",
    "walking",  # a walking suggestion (else anti-sedentary)
    "slot2",
    "slot3",
    "slot4",
    "slot5",
    "home",
    "work",
    "weekend",
    "steps30pre",  # log steps in the 30 minutes before, scaled
    "outdoor_ok",  # dry weather
    "temperature",
    "study_week",
)
RUNNERS = ("person-rate", "pooled", "no-prior", "transfer", "runner-transfer", "runner-bundled")
# The product's own runners, as shipped, by their name here.
PRODUCT_RUNNERS = {"runner-transfer": "transfer", "runner-bundled": "bundled"}
# The product's default runner (`[runner] name`), as the replay names it.
DEFAULT_RUNNER = next(k for k, v in PRODUCT_RUNNERS.items() if v == RunnerSettings().name)
NO_PRIOR_GRID = (0.5, 1.0, 2.0)  # prior sd of every weight
TRANSFER_GRID = (0.1, 0.25, 0.5, 1.0)  # prior sd of a person's deviation from the pool
DRY = ("Clear", "Partly Cloudy", "Mostly Cloudy", "Overcast", "Scattered Clouds")
EPS = 1e-6
EXERCISE = ACTIONS.index("EXERCISE")


@dataclass
class Decision:
    """One decision point of one person, in time order."""

    person: str
    at: float  # decision time, epoch seconds
    answered_at: float | None
    available: bool
    sent: str  # none, active or sedentary
    accepted: int | None  # 1/0 for a sent suggestion under the coding; None: no label
    steps30: float | None
    context: np.ndarray  # FEATURES without the kind (walking is set per kind)
    week: int


@dataclass
class Person:
    name: str
    decisions: list[Decision] = field(default_factory=list)


def load(directory: Path, coding: str = "ignore") -> list[Person]:
    """The trial's people from `suggestions.csv` (one line per decision point)."""
    import pandas as pd

    path = Path(directory) / "suggestions.csv"
    if not path.is_file():
        raise InputError(
            f"{path}: no HeartSteps suggestions.csv here; give the folder that holds "
            "suggestions.csv and users.csv (see ../shared/datasets/README.md)"
        )
    if coding not in ("ignore", "rated"):
        raise InputError(f"coding {coding!r}: use 'ignore' or 'rated'")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = {"user.index", "sugg.decision.utime", "send", "response"} - set(frame.columns)
    if missing:
        raise InputError(f"{path}: missing columns {', '.join(sorted(missing))}")
    people: dict[str, Person] = {}
    first: dict[str, float] = {}
    for row in frame.to_dict("records"):
        at = _time(row.get("sugg.decision.utime", ""))
        if at is None:
            continue
        person = people.setdefault(row["user.index"], Person(row["user.index"]))
        start = first.setdefault(person.name, at)
        person.decisions.append(_decision(row, at, start, coding))
    for person in people.values():
        person.decisions.sort(key=lambda d: d.at)
    return [people[k] for k in sorted(people, key=lambda k: int(k) if k.isdigit() else k)]


def _time(text: str) -> float | None:
    from datetime import UTC, datetime

    try:
        return datetime.strptime(text.strip(), "%Y/%m/%d %H:%M").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def _float(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _decision(row: dict[str, str], at: float, start: float, coding: str) -> Decision:
    sent = "none"
    if row.get("send") == "TRUE":
        sent = "active" if row.get("send.active") == "TRUE" else "sedentary"
    response = row.get("response", "")
    accepted: int | None = None
    if sent != "none":
        if response == "good":
            accepted = 1
        elif response == "bad" or coding == "ignore":
            accepted = 0
    slot = int(_float(row.get("sugg.decision.slot", "")) or 1)
    place = row.get("dec.location.category", "")
    steps = _float(row.get("jbsteps30pre", "")) or 0.0
    temperature = _float(row.get("dec.temperature", ""))
    day = (at - start) / 86400
    from datetime import UTC, datetime

    weekday = datetime.fromtimestamp(at, UTC).weekday()
    context = np.array(
        [
            1.0,
            0.0,
            *(float(slot == s) for s in (2, 3, 4, 5)),
            float(place == "home"),
            float(place == "work"),
            float(weekday >= 5),
            math.log1p(max(steps, 0.0)) / 8.0,
            float(row.get("dec.weather.condition", "") in DRY),
            (temperature or 10.0) / 30.0,
            day / 42.0,
        ]
    )
    return Decision(
        person=row["user.index"],
        at=at,
        answered_at=_time(row.get("sugg.response.utime", "")),
        available=row.get("avail") == "TRUE",
        sent=sent,
        accepted=accepted,
        steps30=_float(row.get("jbsteps30", "")),
        context=context,
        week=min(int(day // 7), 5),
    )


def features(decision: Decision, kind: str | None = None) -> np.ndarray:
    x = decision.context.copy()
    x[1] = float((kind or decision.sent) == "active")
    return x


# ---- learners ---------------------------------------------------------------------------


class PersonRate:
    def __init__(self) -> None:
        self.accepted, self.n = 1.0, 2.0

    def predict(self, _x: np.ndarray) -> float:
        return self.accepted / self.n

    def update(self, _x: np.ndarray, y: int) -> None:
        self.accepted += y
        self.n += 1


class Fixed:
    def __init__(self, weights: np.ndarray) -> None:
        self.weights = weights

    def predict(self, x: np.ndarray) -> float:
        return sigmoid(float(x @ self.weights))

    def update(self, _x: np.ndarray, _y: int) -> None:
        return None


# decision points 1-5 (morning to evening) -> the runner's slots
PRODUCT_SLOT = {0: 0, 1: 1, 2: 1, 3: 2, 4: 2}


class ProductRunner:
    """One of the product's runners on the replay (the runner-shaped history it reads):
    `transfer` or `bundled`, each as shipped.

    Each answered item carries the P(accept) the runner stated for it before its answer
    (`bridge.runner.base.STATED`), as the product's stored recommendations do: the bundled
    runner's per-person correction is fitted on those, never on its current posterior.
    """

    def __init__(self, name: str, sd: float | None = None) -> None:
        self.accept: Callable[[dict[str, Any], list[dict[str, Any]]], np.ndarray]
        self.correct: Callable[[np.ndarray, list[dict[str, Any]]], np.ndarray]
        self.correct = lambda p, _history: p
        if name == "bundled":
            from bridge.runner.bundled import BundledRunner
            from bridge.runner.recalibrate import SD, recalibrated

            bundled = BundledRunner()
            width = SD if sd is None else sd
            self.accept = lambda observation, history: bundled.predict(
                observation, history, corrected=False
            )
            self.correct = lambda p, history: recalibrated(p, history, width)
        else:
            from bridge.runner.transfer import TransferRunner

            transfer = TransferRunner()
            self.accept = lambda observation, history: transfer.predict(observation, history)[0]
        self.history: list[dict[str, Any]] = []
        self._last: tuple[tuple[int, int], float, float] | None = None
        # The runner's own P(accept) stated at each decision point, by its context.
        self.stated: dict[bytes, float] = {}

    @staticmethod
    def _slot(x: np.ndarray) -> int:
        hot = np.flatnonzero(x[2:6] > 0.5)  # slot2..slot5; none: the first
        return PRODUCT_SLOT[int(hot[0]) + 1 if len(hot) else 0]

    @staticmethod
    def _point(x: np.ndarray) -> bytes:
        # Both kinds of suggestion are one action to it: the point without the kind.
        point = x.copy()
        point[1] = 0.0
        return point.tobytes()

    def predict(self, x: np.ndarray) -> float:
        # Both kinds of suggestion are one action to it: ask once per point.
        key = (len(self.history), self._slot(x))
        if self._last is None or self._last[0] != key:
            stated = self.accept({"slot": key[1]}, self.history)
            said = float(self.correct(stated, self.history)[EXERCISE])
            self._last = (key, float(stated[EXERCISE]), said)
        self.stated[self._point(x)] = self._last[1]
        return self._last[2]

    def update(self, x: np.ndarray, y: int) -> None:
        item: dict[str, Any] = {
            "day": len(self.history) // 4 % 7,
            "slot": self._slot(x),
            "meters": {},
            "action": "EXERCISE",
            "response": "accepted" if y else "ignored",
            "meter_deltas": {},
        }
        stated = self.stated.pop(self._point(x), None)
        if stated is not None:  # asked about at this point (else: no stated P to fit)
            item[STATED] = stated
        self.history.append(item)


def pooled_weights(people: list[Person]) -> np.ndarray:
    """A logistic fit on every labelled suggestion of `people` (a weak L2 penalty)."""
    from sklearn.linear_model import LogisticRegression

    rows = [
        (features(d), d.accepted) for p in people for d in p.decisions if d.accepted is not None
    ]
    if not rows or len({y for _, y in rows}) < 2:
        return np.zeros(len(FEATURES))
    x = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows])
    fit = LogisticRegression(C=1.0, fit_intercept=False, max_iter=500).fit(x, y)
    return fit.coef_[0]


@dataclass
class Prediction:
    person: str
    week: int
    p: float
    y: int


def replay(person: Person, learner: Any) -> list[Prediction]:
    """Predict each labelled suggestion before its answer; learn each answer once it is
    given (a late answer after the decision points it missed; no time: at the next point)."""
    out: list[Prediction] = []
    waiting: list[tuple[float, np.ndarray, int]] = []
    for d in person.decisions:
        for item in [w for w in waiting if w[0] <= d.at]:
            learner.update(item[1], item[2])
            waiting.remove(item)
        if d.accepted is None:
            continue
        x = features(d)
        p = min(max(learner.predict(x), EPS), 1 - EPS)
        out.append(Prediction(person.name, d.week, p, d.accepted))
        answered = d.answered_at if d.answered_at and d.answered_at > d.at else d.at + 1
        waiting.append((answered, x, d.accepted))
    return out


def choose(person: Person, learner: Any) -> list[tuple[Decision, str]]:
    """The runner's own choice at each available decision point, from what it knew then."""
    chosen: list[tuple[Decision, str]] = []
    waiting: list[tuple[float, np.ndarray, int]] = []
    for d in person.decisions:
        for item in [w for w in waiting if w[0] <= d.at]:
            learner.update(item[1], item[2])
            waiting.remove(item)
        if d.available:
            best = max(("active", "sedentary"), key=lambda k: learner.predict(features(d, k)))
            p = learner.predict(features(d, best))
            chosen.append((d, best if p >= 0.5 else "none"))
        if d.accepted is not None:
            answered = d.answered_at if d.answered_at and d.answered_at > d.at else d.at + 1
            waiting.append((answered, features(d), d.accepted))
    return chosen


def logloss(preds: list[Prediction]) -> float:
    return float(np.mean([-(q.y * math.log(q.p) + (1 - q.y) * math.log(1 - q.p)) for q in preds]))


def brier(preds: list[Prediction]) -> float:
    return float(np.mean([(q.p - q.y) ** 2 for q in preds]))


def auc(preds: list[Prediction]) -> float | None:
    from sklearn.metrics import roc_auc_score

    ys = [q.y for q in preds]
    if len(set(ys)) < 2:
        return None
    return float(roc_auc_score(ys, [q.p for q in preds]))


def ece(preds: list[Prediction], bins: int = 10) -> tuple[float, list[dict[str, float]]]:
    """Expected calibration error over equal-width bins, and the reliability table."""
    table = []
    total = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = [q for q in preds if lo <= q.p < hi or (b == bins - 1 and q.p == 1.0)]
        if not inside:
            continue
        mean_p = float(np.mean([q.p for q in inside]))
        rate = float(np.mean([q.y for q in inside]))
        total += len(inside) * abs(mean_p - rate)
        table.append(
            {"from": lo, "to": hi, "n": len(inside), "predicted": mean_p, "observed": rate}
        )
    return (total / len(preds) if preds else 0.0), table


def steps_ips(chosen: list[tuple[Decision, str]]) -> float | None:
    """Self-normalised inverse-propensity estimate of the mean steps in the 30 minutes after
    a decision point under the choices, from the trial's randomized sending."""
    num = den = 0.0
    for d, choice in chosen:
        if d.steps30 is None or choice != d.sent:
            continue
        weight = 1.0 / P_SEND[d.sent]
        num += weight * d.steps30
        den += weight
    return num / den if den else None


def _learner(name: str, others: list[Person], hyper: float) -> Any:
    if name == "person-rate":
        return PersonRate()
    if name == "pooled":
        return Fixed(pooled_weights(others))
    if name == "no-prior":
        return OnlineLogistic(np.zeros(len(FEATURES)), hyper)
    if name == "transfer":
        return OnlineLogistic(pooled_weights(others), hyper)
    if name in PRODUCT_RUNNERS:
        return ProductRunner(PRODUCT_RUNNERS[name])
    raise InputError(f"unknown HeartSteps runner {name!r}; use {', '.join(RUNNERS)}")


def _tuned(name: str, others: list[Person]) -> float:
    """The grid value with the lowest prequential log-loss on `others`, each replayed with
    a learner built from the rest of `others` (never the held-out person)."""
    grid = {"no-prior": NO_PRIOR_GRID, "transfer": TRANSFER_GRID}.get(name)
    if not grid:
        return 0.0
    # The pooled prior of each inner person, fitted once and reused across the grid.
    priors = {p.name: pooled_weights([o for o in others if o is not p]) for p in others}

    def score(value: float) -> float:
        preds: list[Prediction] = []
        for p in others:
            mean = priors[p.name] if name == "transfer" else np.zeros(len(FEATURES))
            preds += replay(p, OnlineLogistic(mean, value))
        return logloss(preds)

    return min(grid, key=score)


def evaluate(people: list[Person], runners: tuple[str, ...] = RUNNERS) -> dict[str, Any]:
    """Every runner on every person, leave one person out; the report `eval --heartsteps`
    prints."""
    per_person: list[dict[str, Any]] = []
    everyone: dict[str, list[Prediction]] = {r: [] for r in runners}
    chosen: dict[str, list[tuple[Decision, str]]] = {r: [] for r in runners}
    for person in people:
        others = [p for p in people if p is not person]
        row: dict[str, Any] = {"person": person.name, "runners": {}}
        for name in runners:
            hyper = _tuned(name, others)
            preds = replay(person, _learner(name, others, hyper))
            chosen[name] += choose(person, _learner(name, others, hyper))
            everyone[name] += preds
            if not preds:
                continue
            row["runners"][name] = {
                "n": len(preds),
                "logloss": logloss(preds),
                "brier": brier(preds),
                "auc": auc(preds),
                "hyper": hyper,
            }
        per_person.append(row)
    trial = [(d, d.sent) for p in people for d in p.decisions if d.available]
    summary: dict[str, Any] = {}
    for name in runners:
        preds = everyone[name]
        calibration, table = ece(preds)
        weeks = sorted({q.week for q in preds})
        summary[name] = {
            "n": len(preds),
            "logloss": logloss(preds) if preds else None,
            "brier": brier(preds) if preds else None,
            "auc": auc(preds),
            "ece": calibration,
            "reliability": table,
            "logloss_by_week": {w + 1: logloss([q for q in preds if q.week == w]) for w in weeks},
            "steps_ips": steps_ips(chosen[name]),
        }
    mean = {
        name: float(
            np.mean([r["runners"][name]["logloss"] for r in per_person if name in r["runners"]])
        )
        for name in runners
    }
    beats = {
        name: sum(
            1
            for r in per_person
            if name in r["runners"]
            and "pooled" in r["runners"]
            and r["runners"][name]["logloss"] < r["runners"]["pooled"]["logloss"]
        )
        for name in runners
    }
    return {
        "default_runner": DEFAULT_RUNNER,
        "people": per_person,
        "runners": summary,
        "mean_person_logloss": mean,
        "people_beating_pooled": beats,
        "trial_steps": steps_ips(trial),
        "randomization": P_SEND,
    }


def format_report(report: dict[str, Any]) -> str:
    """The replay as a table: one line per runner, then each person's log-loss."""
    names = list(report["runners"])
    lines = [
        f"{'runner':<15} {'log-loss':>8} {'Brier':>6} {'AUC':>5} {'ECE':>5} {'steps30 IPS':>11} "
        f"{'beats pooled':>12}  log-loss by week"
    ]
    for name in names:
        s = report["runners"][name]
        weeks = " ".join(f"{v:.3f}" for v in s["logloss_by_week"].values())
        auc_text = f"{s['auc']:.3f}" if s["auc"] is not None else "  -  "
        lines.append(
            f"{name:<15} {s['logloss']:8.4f} {s['brier']:6.4f} {auc_text:>5} {s['ece']:5.3f} "
            f"{s['steps_ips'] or 0:11.1f} {report['people_beating_pooled'][name]:>5} of "
            f"{len(report['people']):<3}  {weeks}"
        )
    lines.append(f"trial's own sending: {report['trial_steps']:.1f} steps in the next 30 minutes")
    lines.append("")
    lines.append("person " + " ".join(f"{n:>11}" for n in names))
    for row in report["people"]:
        cells = [
            f"{row['runners'][n]['logloss']:11.4f}" if n in row["runners"] else f"{'-':>11}"
            for n in names
        ]
        lines.append(f"{row['person']:<6} " + " ".join(cells))
    return "\n".join(lines)
