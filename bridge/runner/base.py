"""The runner contract: observation + history -> recommendation.

    observation = {"timestep", "day", "slot", "vitality", "cognition", "progress",
                   "serenity", "connection", "active_event"?, "remaining_steps"?}
    history     = [{"day", "slot", "meters": {...}, "action",
                    "response": "accepted"|"ignored"|"rescheduled"|"expired",
                    "meter_deltas": {...}}]

Meters may be None (no evidence); a runner must cope.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from mappings.actions import ACTIONS


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


class Runner(Protocol):
    name: str
    version: str

    def recommend(
        self, observation: dict[str, Any], history: list[dict[str, Any]]
    ) -> Recommendation: ...
