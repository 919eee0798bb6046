"""An answer to a recommendation, and what it sets off: a Reschedule proposes the next window."""

from __future__ import annotations

from datetime import datetime

from bridge.config import Settings
from bridge.learning.feedback import record_feedback
from bridge.store import Store
from bridge.store.models import Feedback, Recommendation


def answer(
    store: Store,
    settings: Settings,
    recommendation_id: int,
    response: str,
    now: datetime,
    *,
    channel: str = "cli",
) -> tuple[Feedback, bool, Recommendation | None]:
    """Record the answer as always; for a Reschedule, also the next free window for the
    same action (today or tomorrow), or None when the calendar has none.

    Returns the feedback, whether this call created it, and the proposal.
    """
    from bridge.cycle.recommend import reschedule

    fb, created = record_feedback(store, recommendation_id, response, channel)
    proposal = None
    if fb.response == "rescheduled":
        proposal = reschedule(store, settings, recommendation_id, now)
    return fb, created, proposal
