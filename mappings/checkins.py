"""Check-in items: what a person says about how they feel, and which meter each speaks to.

A check-in is the yardstick the meters are measured against (`rhythm-bridge validity`),
never an input: no meter reads a check-in, so agreement between the two cannot be made
by copying one into the other.

Every item is stored as a score in [0, 1] rescaled from the scale it was given on (1-5 on
the command line, the page and Home Assistant; any min-max in an imported CSV), in the
item's own direction (stress: higher = more stressed). `inverse` items speak against
their meter: Serenity should fall when stress rises.

Pure data: no numpy or pandas.
"""

from __future__ import annotations

from dataclasses import dataclass

from mappings.actions import METERS

SCALE = (1, 5)  # the scale of a check-in given here (CLI, page, Home Assistant)


@dataclass(frozen=True)
class Item:
    name: str
    meter: str
    inverse: bool
    question: str  # as the page and Home Assistant ask it


ITEMS: tuple[Item, ...] = (
    Item("energy", "vitality", False, "How much energy do you have?"),
    Item("sleep_quality", "vitality", False, "How well did you sleep?"),
    Item("readiness", "vitality", False, "How ready do you feel for the day?"),
    Item("fatigue", "vitality", True, "How tired are you?"),
    Item("soreness", "vitality", True, "How sore are your muscles?"),
    Item("focus", "cognition", False, "How well can you focus?"),
    Item("stress", "serenity", True, "How stressed are you?"),
    Item("mood", "serenity", False, "How is your mood?"),
    Item("social", "connection", False, "How connected to others do you feel?"),
    Item("productivity", "progress", False, "How much did you get done?"),
)
BY_NAME: dict[str, Item] = {item.name: item for item in ITEMS}
# What the page and Home Assistant ask (the others come in by CSV or the command line).
ASKED = ("energy", "mood", "stress", "focus", "social", "sleep_quality")
if any(item.meter not in METERS for item in ITEMS):  # pragma: no cover - a typo above
    raise ValueError("mappings.checkins: an item names an unknown meter")


def item(name: str) -> Item:
    """The declared item `name` (case and dashes forgiven); KeyError lists the known ones."""
    key = name.strip().lower().replace("-", "_")
    try:
        return BY_NAME[key]
    except KeyError:
        raise KeyError(f"unknown check-in item {name!r}; known: {', '.join(BY_NAME)}") from None


def rescale(value: float, lo: float, hi: float) -> float:
    """`value` on the scale lo..hi as a score in [0, 1]; ValueError when it is off the scale."""
    if not hi > lo:
        raise ValueError(f"scale {lo:g}-{hi:g}: the maximum must be above the minimum")
    if not lo <= value <= hi:
        raise ValueError(f"value {value:g} is outside its scale {lo:g}-{hi:g}")
    return round((value - lo) / (hi - lo), 4)


def items_of(meter: str) -> tuple[Item, ...]:
    return tuple(i for i in ITEMS if i.meter == meter)
