"""The runner contract: observation + history -> recommendation.

    observation = {"timestep", "day", "slot", "vitality", "cognition", "progress",
                   "serenity", "connection", "active_event"?, "remaining_steps"?,
                   "free_minutes"?, "available_actions"?}
    history     = [{"day", "slot", "meters": {...}, "action",
                    "response": "accepted"|"ignored"|"rescheduled"|"expired",
                    "meter_deltas": {...}, "model_accept"?}]

Meters may be None (no evidence); a runner must cope. `free_minutes` is the longest free
calendar window in the slot; `available_actions` the actions a window is long enough for:
a runner recommends only those (the cycle replaces any other answer). `model_accept` is the
P(accept) the runner stated for the item's action when it recommended it, before any
per-person correction (bridge.runner.recalibrate); absent when it stated none.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from mappings.actions import ACTIONS

# The history item's key (and Recommendation.extra's, and the stored column's) for what the
# runner stated then: see the module's docstring.
STATED = "model_accept"


@dataclass(frozen=True)
class Recommendation:
    action: str
    belief: list[float] | None
    rationale: str
    runner: str
    runner_version: str = "1"
    fallback_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"runner {self.runner} returned unknown action {self.action!r}")

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("extra")
        return out


def available_actions(observation: dict[str, Any]) -> list[str]:
    """The actions the calendar leaves room for, in ACTIONS order (all when unsaid)."""
    allowed = observation.get("available_actions")
    if allowed is None:
        return list(ACTIONS)
    return [a for a in ACTIONS if a in allowed]


class Runner(Protocol):
    name: str
    version: str

    def recommend(
        self, observation: dict[str, Any], history: list[dict[str, Any]]
    ) -> Recommendation: ...
