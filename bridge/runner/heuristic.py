"""The RhythmEnv baseline: restore the lowest meter with the action that restores it."""

from __future__ import annotations

from typing import Any

from bridge.runner.base import Recommendation, available_actions
from mappings.actions import METERS

# Which action restores a meter, by slot (morning, afternoon, evening, night).
RESTORE: dict[str, tuple[str, str, str, str]] = {
    "vitality": ("EXERCISE", "EXERCISE", "ME_TIME", "SLEEP"),
    "cognition": ("MEDITATE", "ME_TIME", "ME_TIME", "SLEEP"),
    "progress": ("DEEP_WORK", "DEEP_WORK", "LEARN", "SLEEP"),
    "serenity": ("MEDITATE", "ME_TIME", "MEDITATE", "SLEEP"),
    "connection": ("SOCIALIZE", "SOCIALIZE", "FAMILY_TIME", "SLEEP"),
}
# With no evidence at all, do what a sensible day does in that slot.
DEFAULT_BY_SLOT = ("DEEP_WORK", "ADMIN_WORK", "FAMILY_TIME", "SLEEP")
# Below this, the meter is close to a crash and rest comes first.
CRASH_GUARD = 0.2


class HeuristicRunner:
    name = "heuristic"
    version = "1"

    def recommend(
        self, observation: dict[str, Any], history: list[dict[str, Any]]
    ) -> Recommendation:
        slot = int(observation.get("slot", 0)) % 4
        allowed = available_actions(observation) or list(DEFAULT_BY_SLOT)
        known = {m: float(observation[m]) for m in METERS if observation.get(m) is not None}
        if not known:
            default = DEFAULT_BY_SLOT[slot]
            return Recommendation(
                default if default in allowed else allowed[0],
                None,
                "no meter has evidence yet; following the time of day",
                self.name,
                self.version,
            )
        lowest = min(known, key=lambda m: (known[m], METERS.index(m)))
        value = known[lowest]
        action = RESTORE[lowest][slot]
        if lowest == "vitality" and value < CRASH_GUARD and action == "EXERCISE":
            action = "ME_TIME"  # exercise on an empty tank drains before it restores
        note = ""
        if action not in allowed:
            # The calendar has no room for it: restore the next-lowest meter that fits.
            note = f"; no window for {action}"
            order = sorted(known, key=lambda m: (known[m], METERS.index(m)))
            fits = [RESTORE[m][slot] for m in order if RESTORE[m][slot] in allowed]
            action = fits[0] if fits else allowed[0]
        return Recommendation(
            action,
            None,
            f"{lowest} is lowest ({value:.2f}); {action} restores it{note}",
            self.name,
            self.version,
        )
