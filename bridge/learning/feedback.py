"""Recording the person's answer to a recommendation (the reward the runner adapts to)."""

from __future__ import annotations

from sqlalchemy import select
from sqlmodel import col

from bridge.errors import BridgeError, InputError
from bridge.store import Store, upsert
from bridge.store.db import utcnow
from bridge.store.models import Feedback, Recommendation
from mappings.actions import RESPONSES

# The seed: Accept -> +1, Ignore / Reschedule -> -1. An unanswered recommendation that
# expired says nothing either way.
REWARD = {"accepted": 1.0, "ignored": -1.0, "rescheduled": -1.0, "expired": 0.0}
ALIASES = {"accept": "accepted", "ignore": "ignored", "reschedule": "rescheduled"}


class UnknownRecommendation(BridgeError):
    """No recommendation has that id."""


def record_feedback(
    store: Store, recommendation_id: int, response: str, channel: str = "cli"
) -> tuple[Feedback, bool]:
    """Store one answer; a second answer to the same recommendation changes nothing.

    Returns the stored feedback and whether this call created it.
    """
    response = ALIASES.get(response, response)
    if response not in RESPONSES:
        raise InputError(f"response {response!r}: use accept, ignore or reschedule")
    with store.transaction() as session:
        if session.get(Recommendation, recommendation_id) is None:
            raise UnknownRecommendation(f"no recommendation with id {recommendation_id}")
        created = (
            upsert(
                session,
                Feedback,
                [
                    {
                        "recommendation_id": recommendation_id,
                        "response": response,
                        "reward": REWARD[response],
                        "channel": channel,
                        "created_at": utcnow(),
                    }
                ],
                keys=("recommendation_id",),
            )
            > 0
        )
        fb = session.execute(
            select(Feedback).where(col(Feedback.recommendation_id) == recommendation_id)
        ).scalar_one()
    return fb, created
