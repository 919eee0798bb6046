"""The RhythmEnv vocabulary: the 10 actions, the 5 meters, the 3 belief axes."""

from __future__ import annotations

ACTIONS: tuple[str, ...] = (
    "DEEP_WORK",
    "ADMIN_WORK",
    "LEARN",
    "EXERCISE",
    "MEDITATE",
    "FAMILY_TIME",
    "SOCIALIZE",
    "ME_TIME",
    "SLEEP",
    "BINGE_WATCH",
)

METERS: tuple[str, ...] = ("vitality", "cognition", "progress", "serenity", "connection")

BELIEF_AXES: tuple[str, ...] = ("social", "morning", "work")

# Labels the classifier may give that are not actions: the event happens but is not
# something the person chose to do with that slot (holidays, flights, someone's birthday).
NOT_AN_ACTION = "NOT_AN_ACTION"
UNCLASSIFIED = "UNCLASSIFIED"

RESPONSES: tuple[str, ...] = ("accepted", "ignored", "rescheduled", "expired")


def is_action(name: str) -> bool:
    """True for one of the 10 action names (exact spelling)."""
    return name in ACTIONS
