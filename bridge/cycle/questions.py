"""`classify --questions`: the calendar's title groups whose answer would set the most time right.

Reads the timed events of the past four weeks and the next two, labels them as the
classifier does now (corrections, rules, model, context; never the LLM: a question is what
is left for the person), and ranks the groups nobody has answered (mappings.classifier_questions).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select
from sqlmodel import col

from bridge.config import Settings
from bridge.cycle.classify import build_classifier, calendar_leans, event_infos, stored_standing
from bridge.learning.corrections import corrections
from bridge.store import Store
from bridge.store.models import CalendarEvent
from mappings.classifier_overrides import group_key
from mappings.classifier_questions import DEFAULT_QUESTIONS, Occurrence, Question, questions

PAST = timedelta(weeks=4)
AHEAD = timedelta(weeks=2)


def window_events(store: Store, now: datetime) -> list[CalendarEvent]:
    """Timed, not cancelled, not declined events starting in the questions' window."""
    with store.session() as session:
        stmt = select(CalendarEvent).where(
            col(CalendarEvent.start_utc) >= now - PAST,
            col(CalendarEvent.start_utc) < now + AHEAD,
            col(CalendarEvent.status) != "cancelled",
            col(CalendarEvent.all_day).is_(False),  # markers: a day long, no one's activity
            col(CalendarEvent.self_response) != "declined",
        )
        return list(session.execute(stmt).scalars())


def calendar_questions(
    store: Store, settings: Settings, now: datetime, n: int = DEFAULT_QUESTIONS
) -> list[Question]:
    """The n best questions for this calendar now, best first."""
    rows = window_events(store, now)
    if not rows:
        return []
    classifier = build_classifier(settings, store, use_llm=False)
    standing = stored_standing(store)
    infos = event_infos(rows, settings, standing, calendar_leans(classifier, standing))
    labels = classifier.classify_many(infos)
    occurrences = [
        Occurrence(
            ev.title,
            (ev.end_utc - ev.start_utc).total_seconds() / 60,
            lab.action,
            lab.confidence,
            lab.layer,
        )
        for ev, lab in zip(rows, labels, strict=True)
    ]
    answered = {group_key(c.title) for c in corrections(store)}
    return questions(occurrences, n, answered)
