"""Accepted and rescheduled suggestions as an iCalendar feed a calendar app subscribes to.

What goes in: every recommendation with a window that was accepted, and every proposal a
Reschedule made unless it was then ignored or rescheduled again. An entry keeps its UID
for its whole life, so a client updates it in place and drops it when the answer changes.
Only the action and its time leave the machine: no rationale, no belief, no meters.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import select
from sqlmodel import col

from bridge.store import Store
from bridge.store.models import Feedback, Recommendation

FEED_DAYS = 60  # how far back entries stay in the feed
REFRESH = timedelta(minutes=15)  # asked of clients; Google decides on its own
CALNAME = "rhythm-bridge"
PRODID = "-//rhythm-bridge//calendar feed 1//EN"
UID_DOMAIN = "rhythm-bridge.invalid"
GONE = ("ignored", "rescheduled", "expired")


def feed_entries(store: Store, today: date) -> list[tuple[Recommendation, Feedback | None]]:
    since = today - timedelta(days=FEED_DAYS)
    with store.session() as session:
        rows = session.execute(
            select(Recommendation, Feedback)
            .outerjoin(Feedback, col(Feedback.recommendation_id) == col(Recommendation.id))
            .where(
                col(Recommendation.local_date) >= since,
                col(Recommendation.window_start).is_not(None),
            )
            .order_by(col(Recommendation.local_date), col(Recommendation.slot))
        ).all()
    return [(rec, fb) for rec, fb in rows if in_feed(rec, fb)]


def in_feed(rec: Recommendation, fb: Feedback | None) -> bool:
    """Accepted, or a Reschedule's proposal not (yet) ignored, rescheduled or expired."""
    if rec.window_start is None:
        return False
    answer = fb.response if fb else None
    return answer == "accepted" or (rec.rescheduled_from is not None and answer not in GONE)


def build_feed(store: Store, now: datetime) -> bytes:
    """The feed as bytes (CRLF lines, folded), ready to serve as text/calendar."""
    from icalendar import Calendar, Event, vDuration

    cal = Calendar()
    cal.add("prodid", PRODID)
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("method", "PUBLISH")
    cal.add("x-wr-calname", CALNAME)
    cal.add("x-wr-caldesc", "Suggestions you accepted or rescheduled in rhythm-bridge")
    cal.add("x-published-ttl", vDuration(REFRESH))
    cal.add("refresh-interval", vDuration(REFRESH), parameters={"VALUE": "DURATION"})
    for rec, fb in feed_entries(store, now.astimezone(UTC).date()):
        ev = Event()
        ev.add("uid", f"rb-rec-{rec.id}@{UID_DOMAIN}")
        # DTSTAMP: when this entry last changed (its answer), so the bytes stay the same
        # between changes and a client's conditional request gets 304.
        ev.add("dtstamp", (fb.created_at if fb else rec.created_at).astimezone(UTC))
        assert rec.window_start and rec.window_end  # feed_entries() reads only placed ones
        ev.add("dtstart", rec.window_start.astimezone(UTC))
        ev.add("dtend", rec.window_end.astimezone(UTC))
        ev.add("summary", rec.action.replace("_", " ").capitalize())
        accepted = fb is not None and fb.response == "accepted"
        ev.add("status", "CONFIRMED" if accepted else "TENTATIVE")
        ev.add("transp", "OPAQUE")
        ev.add("sequence", 1 if fb is not None else 0)
        ev.add(
            "description",
            "Accepted in rhythm-bridge."
            if accepted
            else "Proposed by rhythm-bridge after a Reschedule; answer it on the page.",
        )
        cal.add_component(ev)
    return cal.to_ical()


def etag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
