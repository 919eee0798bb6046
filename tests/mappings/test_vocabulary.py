"""mappings/vocabulary.py against the weights, the connectors and the plausibility ranges.

`mappings/` may not import the connectors, so the cross-check lives here."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from bridge.out.status import METER_INPUTS
from connectors.registry import SOURCES
from connectors.validate import RANGES
from mappings import inputs
from mappings.actions import METERS
from mappings.frames import USED_METRICS
from mappings.freshness import INPUT_METRICS, metrics_of
from mappings.inputs import HABITS, InputArray
from mappings.meters import REASONS, load_weights
from mappings.signals import SIGNALS
from mappings.vocabulary import BY_NAME, CALENDAR, INPUTS, TASKS, InputSpec, bundled_weights

PROVIDED = frozenset(m for source in SOURCES for m in source.provides)
by_name = pytest.mark.parametrize("spec", INPUTS, ids=[s.name for s in INPUTS])


def test_every_weight_names_a_declared_input_and_every_input_has_a_weight():
    weights = load_weights()
    named = {name for meter in METERS for name in weights.meters[meter]}
    assert named <= set(BY_NAME), f"undeclared inputs in meter_weights.toml: {named - set(BY_NAME)}"
    assert set(BY_NAME) <= named, f"declared but weighted nowhere: {set(BY_NAME) - named}"


@by_name
def test_every_metric_an_input_reads_is_provided_by_a_connector(spec: InputSpec):
    missing = sorted(set(spec.metrics) - PROVIDED)
    assert not missing, (
        f"{spec.name} reads {missing}: no spec in connectors/registry.py provides it"
    )


@by_name
def test_every_reading_an_input_reads_has_a_plausibility_range(spec: InputSpec):
    missing = sorted(set(spec.metrics) - {CALENDAR, TASKS} - set(RANGES))
    assert not missing, f"{spec.name} reads {missing}: no range in connectors/validate.py"


@by_name
def test_an_inputs_builders_are_functions_of_mappings_inputs_that_run(spec: InputSpec):
    assert spec.builders and spec.unit and spec.evidence
    called = inspect.getsource(inputs.all_inputs)
    for name in spec.builders:
        assert callable(getattr(inputs, name, None)), f"{spec.name}: no mappings.inputs.{name}"
        assert f"{name}(" in called, f"mappings.inputs.all_inputs never calls {name}"


def test_signals_and_habits_are_declared_inputs_built_by_their_function():
    for signal in SIGNALS:
        assert BY_NAME[signal.name].builders == ("signal_inputs",)
        assert set(signal.population) <= set(signal.metrics), signal.name
        assert set(signal.floors) <= set(signal.metrics), signal.name
    for habit in HABITS:
        assert BY_NAME[habit.name].builders == ("habit_inputs",)


def test_the_derived_tables_cover_every_input_and_meter():
    assert set(INPUT_METRICS) == set(BY_NAME)
    assert {m for s in INPUTS for m in s.metrics} - {CALENDAR, TASKS} == USED_METRICS
    assert set(REASONS) == set(METERS) and all(REASONS.values())
    fed = {m for s in INPUTS for m in s.metrics}
    assert set(METER_INPUTS) == fed
    assert {
        metric: tuple(
            m
            for m in METERS
            if any(metric in BY_NAME[name].metrics for name in bundled_weights()[m])
        )
        for metric in fed
    } == METER_INPUTS


def test_an_undeclared_input_is_an_error_not_a_default():
    with pytest.raises(KeyError, match="not declared"):
        metrics_of(["no_such_input"])
    empty = np.zeros(1)
    with pytest.raises(KeyError, match="not declared"):
        InputArray("no_such_input", empty, empty, empty)
