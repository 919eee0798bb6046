"""The families of simulated people, by name; each module holds one `FAMILY` (bridge.sim.family).

They are imported on demand: `eval` and training name the families they use.
"""

from __future__ import annotations

from importlib import import_module

from bridge.sim.family import Family

# Written independently of one another; "rhythm" is the world the bundled model was
# first trained on (bridge.sim.world), the others were written later by other hands.
MODULES = {
    "rhythm": "bridge.sim.families.rhythm",
    "fatigue": "bridge.sim.families.fatigue",
    "habits": "bridge.sim.families.habits",
    "shifts": "bridge.sim.families.shifts",
}
NAMES = tuple(MODULES)


def family(name: str) -> Family:
    """The family called `name`; a ValueError naming the choices for any other."""
    if name not in MODULES:
        raise ValueError(f"unknown family {name!r}; choose one of: {', '.join(NAMES)}")
    return import_module(MODULES[name]).FAMILY
