"""Runners: what to do next, given the person's state and their answers so far."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from bridge.runner.base import Recommendation, Runner

# name -> "module:Class", imported on demand.
RUNNERS: dict[str, str] = {
    "bundled": "bridge.runner.bundled:BundledRunner",
    "heuristic": "bridge.runner.heuristic:HeuristicRunner",
    "openai": "bridge.runner.openai_runner:OpenAIRunner",
    "random": "bridge.runner.random_runner:RandomRunner",
    "transfer": "bridge.runner.transfer:TransferRunner",
}


def load_runner(name: str, **options: Any) -> Runner:
    """The runner called `name`, built with its options; ValueError lists the known ones."""
    try:
        module_name, cls_name = RUNNERS[name].split(":")
    except KeyError:
        raise ValueError(
            f"unknown runner {name!r}; choose one of: {', '.join(sorted(RUNNERS))}"
        ) from None
    return getattr(import_module(module_name), cls_name)(**options)


__all__ = ["RUNNERS", "Recommendation", "Runner", "load_runner"]
