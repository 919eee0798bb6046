"""The seed's in-context prompt for an LLM runner, and the parser for its answer."""

from __future__ import annotations

import re
from typing import Any

from mappings.actions import ACTIONS, METERS

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
SLOTS = ("Morning", "Afternoon", "Evening", "Night")
MAX_HISTORY = 120  # 30 days of four slots

SYSTEM = (
    "You are a life management agent. A person's day has four slots; five meters in [0, 1] "
    "describe them: Vitality, Cognition, Progress, Serenity, Connection. Each slot you "
    "recommend one action: " + ", ".join(ACTIONS) + ". The person has a hidden profile: "
    "S (social preference), M (morning preference), W (work preference), each in [0, 1]. "
    "Infer it from which recommendations they accepted or ignored and how their meters "
    "changed, keep every meter above 0.1, and recommend what this person will accept. "
    "Think briefly, then end with one line `S M W ACTION`, where S, M and W are single "
    "digits 0-9 (value x 9), e.g. `2 7 5 DEEP_WORK`."
)
_FINAL = re.compile(r"^\W*([0-9])\s+([0-9])\s+([0-9])\s+([A-Z_]+)\W*$")


def _meters(doc: dict[str, Any]) -> str:
    parts = [f"{m.capitalize()}={doc[m]:.2f}" for m in METERS if doc.get(m) is not None]
    return ", ".join(parts) if parts else "meters unknown"


def _deltas(deltas: dict[str, Any] | None) -> str:
    if not deltas:
        return ""
    parts = [f"{m.capitalize()}{deltas[m]:+.2f}" for m in METERS if deltas.get(m) is not None]
    return f" (then {', '.join(parts)})" if parts else ""


def build_prompt(observation: dict[str, Any], history: list[dict[str, Any]]) -> str:
    """The user message: recent interactions, current state, the question."""
    lines = ["Recent interactions (last 30 days):"]
    for h in history[-MAX_HISTORY:]:
        where = f"{DAYS[int(h.get('day', 0)) % 7]} {SLOTS[int(h.get('slot', 0)) % 4]}"
        lines.append(
            f"{where}, {_meters(h.get('meters') or {})} -> recommended {h.get('action')} -> "
            f"user: {str(h.get('response', '')).upper()}{_deltas(h.get('meter_deltas'))}"
        )
    if not history:
        lines.append("(none yet)")
    day = DAY_NAMES[int(observation.get("day", 0)) % 7]
    slot = SLOTS[int(observation.get("slot", 0)) % 4]
    state = f"Current state: {day} {slot}, {_meters(observation)}"
    if observation.get("active_event"):
        state += f"; the calendar has {observation['active_event']} now"
    if observation.get("available_actions") is not None:
        state += (
            f"; longest free window {observation.get('free_minutes', 0):.0f} min, "
            f"room only for: {', '.join(observation['available_actions'])}"
        )
    if observation.get("tasks_due") or observation.get("tasks_overdue"):
        # Actions only: task titles are private and stay on the machine.
        due = [str(t.get("action") or "UNCLASSIFIED") for t in observation.get("tasks_due", [])]
        state += f"; tasks due in this slot: {', '.join(due) or 'none'}"
        state += f", {int(observation.get('tasks_overdue', 0))} overdue"
    lines += ["", state, "Recommend an action:"]
    return "\n".join(lines)


def parse_answer(text: str) -> tuple[list[float], str, str] | None:
    """(belief, action, reasoning line) from the last valid `S M W ACTION` line, or None."""
    lines = [line.strip() for line in text.splitlines()]
    for i in range(len(lines) - 1, -1, -1):
        match = _FINAL.match(lines[i])
        if match and match.group(4) in ACTIONS:
            belief = [int(match.group(k)) / 9 for k in (1, 2, 3)]
            # The reasoning: the last real sentence, not a "**Final answer:**" header.
            before = [ln for ln in lines[:i] if len(ln.split()) >= 4 and not _FINAL.match(ln)]
            reason = before[-1] if before else ""
            return belief, match.group(4), reason
    return None
