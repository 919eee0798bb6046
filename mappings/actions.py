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

# What a person reads instead of the constant (the page, notifications): "Deep work".
ACTION_NAMES: dict[str, str] = {
    "DEEP_WORK": "Deep work",
    "ADMIN_WORK": "Admin work",
    "LEARN": "Learning",
    "EXERCISE": "Exercise",
    "MEDITATE": "Meditation",
    "FAMILY_TIME": "Family time",
    "SOCIALIZE": "Socializing",
    "ME_TIME": "Me time",
    "SLEEP": "Sleep",
    "BINGE_WATCH": "Binge-watching",
    NOT_AN_ACTION: "Not an action",
    UNCLASSIFIED: "Not labelled yet",
}


def action_name(name: str | None) -> str:
    """The human name of an action or label ("Deep work"); an unknown one made readable."""
    if not name:
        return ""
    return ACTION_NAMES.get(name) or name.replace("_", " ").capitalize()


RESPONSES: tuple[str, ...] = ("accepted", "ignored", "rescheduled", "expired")


def is_action(name: str) -> bool:
    """True for one of the 10 action names (exact spelling)."""
    return name in ACTIONS
