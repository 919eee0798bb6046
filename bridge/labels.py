"""The person's own label for an event, from the web page.

It becomes a classifier correction for the event's title (so every event titled like it
gets that label from now on, and the next retrain learns from it) and relabels this event
at once, so the page shows the answer without waiting for a cycle.
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
    """Label an event by hand: store the correction, then relabel the row; returns the label."""
    from bridge.classification import add_correction

    if action not in LABELS:
        raise InputError(f"action {action!r}: use one of {', '.join(LABELS)}")
    with store.session() as session:
        ev = session.get(CalendarEvent, event_id)
        if ev is None:
            raise UnknownEvent(f"no calendar event with id {event_id}")
        title = ev.title
    # Two short transactions, not one: the correction is the durable part and is
    # idempotent, so a failure between them is mended by the next cycle's relabelling.
    add_correction(store, title, action, channel="web")
    with store.transaction() as session:
        ev = session.get(CalendarEvent, event_id)
        changed = (ev.action, ev.action_layer) != (action, USER_LAYER)
        if changed:
            # updated_at stays: a relabel is not a calendar change (implicit feedback reads it)
            ev.action, ev.action_confidence, ev.action_layer = action, 1.0, USER_LAYER
        return {"id": event_id, "action": action, "layer": USER_LAYER, "changed": changed}
