"""Every meter input, declared once: its name, what it reads, its unit, what computes it.

The metrics the meters read (`mappings.frames.USED_METRICS`), the freshness table
(`mappings.freshness.INPUT_METRICS`), the reasons of a null meter, the signals' and
habits' metrics and units, and `status`' table of which meters each metric feeds are
derived from `INPUTS`. A weight naming an unknown input, an input reading a metric that no
connector provides or that has no plausibility range fail `tests/mappings/test_vocabulary.py`
(connectors are not imported here: `mappings/` imports nothing of the rest).

Pure data: no numpy or pandas, so the daemon can read it.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

from mappings.actions import METERS

CALENDAR = "calendar"
TASKS = "tasks"


@dataclass(frozen=True, kw_only=True)
class InputSpec:
    """One meter input, as `meter_weights.toml` names it."""

    name: str
    # What it reads: stored reading metrics, or the calendar / the tasks.
    metrics: tuple[str, ...]
    unit: str  # of its raw value, shown beside it in provenance
    # The functions of `mappings.inputs` that compute it (the task list's deadline
    # replaces the one guessed from the calendar, slot by slot).
    builders: tuple[str, ...]
    # How a meter that is null for lack of it names what is missing.
    evidence: str


def _sleep(name: str, unit: str) -> InputSpec:
    return InputSpec(
        name=name, metrics=("sleep",), unit=unit, builders=("sleep_inputs",), evidence="sleep"
    )


def _calendar(name: str, unit: str) -> InputSpec:
    return InputSpec(
        name=name,
        metrics=(CALENDAR,),
        unit=unit,
        builders=("calendar_inputs",),
        evidence=CALENDAR,
    )


def _tasks(name: str, unit: str) -> InputSpec:
    return InputSpec(
        name=name, metrics=(TASKS,), unit=unit, builders=("task_inputs",), evidence=TASKS
    )


# In the order `status` lists the metrics they read.
INPUTS: tuple[InputSpec, ...] = (
    _sleep("sleep_duration", "min"),
    _sleep("sleep_efficiency", "share"),
    _sleep("deep_sleep_share", "share"),
    _sleep("rem_sleep_share", "share"),
    _sleep("sleep_regularity", "min off your usual midpoint"),
    InputSpec(
        name="hrv",
        metrics=("hrv_sdnn", "hrv_rmssd"),  # scored apart, per method and source
        unit="ms",
        builders=("signal_inputs",),
        evidence="HRV",
    ),
    InputSpec(
        name="resting_hr",
        metrics=("resting_hr",),
        unit="bpm",
        builders=("signal_inputs",),
        evidence="resting heart rate",
    ),
    InputSpec(
        name="steps",
        metrics=("steps",),
        unit="steps today",
        builders=("steps_input",),
        evidence="steps",
    ),
    InputSpec(
        name="stress",
        metrics=("stress",),
        unit="0-100",
        builders=("signal_inputs",),
        evidence="stress",
    ),
    InputSpec(
        name="recovery",
        # WHOOP's recovery (%) and Fitbit's sleep restoration (of 25), scored apart
        metrics=("recovery", "restoration"),
        unit="% or of 25",
        builders=("signal_inputs",),
        evidence="recovery",
    ),
    InputSpec(
        name="body_battery",
        metrics=("body_battery",),
        unit="0-100",
        builders=("signal_inputs",),
        evidence="body battery",
    ),
    InputSpec(
        name="workouts",
        metrics=("workout",),
        unit="min in 7 days",
        builders=("habit_inputs",),
        evidence="workout",
    ),
    InputSpec(
        name="mindful",
        metrics=("mindful",),
        unit="min in 24 h",
        builders=("habit_inputs",),
        evidence="mindfulness",
    ),
    _calendar("slot_density", "busy share of this slot"),
    _calendar("day_load", "busy share of the day so far"),
    _calendar("meeting_density", "meetings today"),
    _calendar("longest_stretch", "min without a break"),
    _calendar("focus_today", "focus min today"),
    _calendar("focus_week", "focus min per day, past 7 days"),
    InputSpec(
        name="deadline_runway",
        metrics=(CALENDAR, TASKS),
        unit="days to the next deadline",
        builders=("calendar_inputs", "task_inputs"),
        evidence=CALENDAR,
    ),
    _calendar("social_week", "social/family events in 7 days"),
    _tasks("tasks_today", "tasks done today"),
    _tasks("tasks_week", "tasks done, past 7 days"),
    _tasks("overdue_tasks", "overdue open tasks"),
)


@dataclass(frozen=True, kw_only=True)
class VendorScore:
    """A vendor's own composite, stored as a reading and shown beside the meters.

    Kept as a reference to measure the meters against, never as the truth. `inputs`: the
    meter inputs that read it; `[vendor_scores] as_inputs = false` in a weights file
    leaves those out of every meter, so agreement with the score is not circular.
    """

    metric: str
    name: str  # how status, the page and the snapshot name it
    unit: str
    # Which stored labels are the score itself (Body Battery also stores a day's
    # highest and lowest, which are not).
    labels: tuple[str, ...] = ("",)
    inputs: tuple[str, ...] = ()


VENDOR_SCORES: tuple[VendorScore, ...] = (
    VendorScore(metric="sleep_score", name="sleep score", unit="0-100"),
    VendorScore(metric="recovery", name="recovery", unit="%", inputs=("recovery",)),
    VendorScore(
        metric="body_battery",
        name="Body Battery",
        unit="0-100",
        labels=("", "at_wake"),
        inputs=("body_battery",),
    ),
    VendorScore(metric="readiness_score", name="readiness", unit="0-100"),
    VendorScore(metric="stress_score", name="stress management score", unit="0-100"),
)
# The meter inputs that are a vendor's composite (the weights' switch drops them).
VENDOR_INPUTS = frozenset(name for score in VENDOR_SCORES for name in score.inputs)

BY_NAME: dict[str, InputSpec] = {spec.name: spec for spec in INPUTS}
if len(BY_NAME) != len(INPUTS):
    raise ValueError("mappings.vocabulary: two inputs share a name")

# The stored reading metrics the meters read (the calendar and the tasks are frames of
# their own); a reading of any other metric is stored but never loaded for the meters.
USED_METRICS = frozenset(m for spec in INPUTS for m in spec.metrics) - {CALENDAR, TASKS}


def spec(name: str) -> InputSpec:
    """The declared input `name`; KeyError names the undeclared one."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"meter input {name!r} is not declared in mappings/vocabulary.py") from None


@cache
def bundled_weights() -> dict[str, dict[str, float]]:
    """meter -> {input: weight} of the bundled `meter_weights.toml` (no pandas needed)."""
    doc = tomllib.loads(files("mappings").joinpath("meter_weights.toml").read_text("utf-8"))
    return {meter: dict(doc[meter]) for meter in METERS}


def _either(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def null_reason(inputs: list[str]) -> str:
    """Why a meter with these inputs is null: the kinds of evidence it lacked.

    Readings are listed by what they measure; the calendar and the tasks each have their
    phrase. A calendar next to readings is the day's (its inputs there measure the day so
    far); alone it is the week's (the social and focus inputs count 7 days).
    """
    words = list(dict.fromkeys(spec(name).evidence for name in inputs))
    readings = [w for w in words if w not in (CALENDAR, TASKS)]
    parts = [f"no {_either(readings)} data"] if readings else []
    if CALENDAR in words:
        parts.append(
            "no calendar for this day" if readings else "no calendar events in the past 7 days"
        )
    if TASKS in words:
        parts.append("no tasks to measure work done")
    if readings and len(parts) == 1:
        parts[0] += " for this slot yet"
    return " and ".join(parts)


def meters_fed(weights: dict[str, dict[str, float]]) -> dict[str, tuple[str, ...]]:
    """metric (or "calendar"/"tasks") -> the meters an input reading it has a weight in."""
    out: dict[str, set[str]] = {}
    for input_spec in INPUTS:
        for metric in input_spec.metrics:
            fed = out.setdefault(metric, set())
            fed.update(m for m in METERS if weights[m].get(input_spec.name, 0) > 0)
    return {metric: tuple(m for m in METERS if m in fed) for metric, fed in out.items() if fed}
