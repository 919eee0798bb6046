"""The person's own label for an event, overriding the classifier's.

Stand-in until the classifier's corrections land (mappings `correct(...)` plus its
table): it writes the label on the event row only. The label stays until the event itself
changes (the classifier re-labels changed events).
"""

from __future__ import annotations

from typing import Any

from bridge.errors import BridgeError, InputError
from bridge.store import Store
from bridge.store.models import CalendarEvent
from mappings.actions import ACTIONS, NOT_AN_ACTION

LABELS: tuple[str, ...] = (*ACTIONS, NOT_AN_ACTION)
USER_LAYER = "user"


class UnknownEvent(BridgeError):
    """No calendar event has that id."""


def correct_event_label(store: Store, event_id: int, action: str) -> dict[str, Any]:
    """Set an event's action to the person's choice; returns the new label."""
    if action not in LABELS:
        raise InputError(f"action {action!r}: use one of {', '.join(LABELS)}")
    with store.transaction() as session:
        ev = session.get(CalendarEvent, event_id)
        if ev is None:
            raise UnknownEvent(f"no calendar event with id {event_id}")
        changed = (ev.action, ev.action_layer) != (action, USER_LAYER)
        if changed:
            # updated_at stays: a relabel is not a calendar change (implicit feedback reads it)
            ev.action, ev.action_confidence, ev.action_layer = action, 1.0, USER_LAYER
        return {"id": event_id, "action": action, "layer": USER_LAYER, "changed": changed}
