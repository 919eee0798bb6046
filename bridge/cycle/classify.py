"""The layered classifier wired to one installation (the LLM cache in the store, the
retrained model in the data dir, the LLM client from the config), and the cycle's step
that labels new and changed events.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import select

from bridge.config import Settings
from bridge.errors import ConfigError, InputError
from bridge.files import FILE_MODE, private_dir
from bridge.store import Store, rows_changed, upsert
from bridge.store.db import utcnow
from bridge.store.models import LLMAnswer
from mappings.classifier import (
    EventInfo,
    KeywordClassifier,
    RulesError,
    calendar_kind,
    calendar_name,
)
from mappings.classifier_layers import LayeredClassifier
from mappings.classifier_model import (
    LearnedModel,
    ModelError,
    bundled_training_set,
    corrections_digest,
    read_labelled,
    save,
    train,
)
from mappings.classifier_model import load as load_model
from mappings.classifier_overrides import Correction, Overrides, group_key

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from bridge.cycle.llm_client import LLMClient


from sqlalchemy import update
from sqlmodel import col

from bridge.learning.corrections import corrections
from bridge.store.models import CalendarEvent

log = logging.getLogger("rhythm_bridge.classifier")


LOCAL_MODEL = "classifier_model.npz"


LLM_CALLS_KEY = "classifier.llm_calls"


def local_model_path(settings: Settings) -> Path:
    """Where the model retrained from the person's corrections lives."""
    return settings.person_path / LOCAL_MODEL


def _model(settings: Settings) -> LearnedModel:
    chosen = settings.classifier.model_file
    path = Path(chosen) if chosen else local_model_path(settings)
    try:
        return load_model(path if chosen or path.exists() else None)
    except ModelError as err:
        if chosen:
            raise ConfigError(f"classifier.model_file: {err}") from None
        # A damaged local retrain must not stop classification: the bundled model still works.
        log.warning("%s; using the bundled model", err)
        return load_model(None)


def llm_client(
    settings: Settings, store: Store | None, *, dry_run: bool = False
) -> LLMClient | None:
    """The LLM layer when an endpoint is configured (or for a dry run), else None."""
    from bridge.cycle.llm_client import LLMClient
    from mappings.classifier_llm import detect_api

    cfg = settings.classifier
    if not cfg.llm_endpoint and not dry_run:
        return None
    if cfg.llm_endpoint and not cfg.llm_model:
        raise ConfigError("classifier.llm_model: set the model name to use with llm_endpoint")
    api = detect_api(cfg.llm_endpoint) if cfg.llm_api == "auto" else cfg.llm_api
    client = LLMClient(
        endpoint=cfg.llm_endpoint,
        model=cfg.llm_model or "(llm_model)",
        api=api,
        timeout=cfg.llm_timeout_seconds,
        budget=cfg.llm_daily_budget,
        dry_run=dry_run,
    )
    if store is not None:
        with store.session() as session:
            rows = session.execute(select(LLMAnswer).where(col(LLMAnswer.model) == client.model))
            client.cache = {r.title_key: (r.action, r.confidence) for r in rows.scalars()}
        day, _, count = (store.get_meta(LLM_CALLS_KEY) or "").partition(" ")
        client.calls = int(count) if day == _today(settings) and count.isdigit() else 0
    return client


def _today(settings: Settings) -> str:
    return utcnow().astimezone(settings.tz).date().isoformat()


def save_llm_state(store: Store, settings: Settings, client: LLMClient | None) -> None:
    """Keep the new LLM answers and today's call count (the budget survives restarts);
    close the client's connections."""
    if client is None:
        return
    client.close()
    if client.dry_run:
        return
    now = utcnow()
    rows = [
        {
            "model": client.model,
            "title_key": key,
            "action": action,
            "confidence": conf,
            "created_at": now,
        }
        for key, (action, conf) in client.new_answers.items()
    ]
    with store.transaction() as session:
        upsert(
            session, LLMAnswer, rows, keys=("model", "title_key"), update=("action", "confidence")
        )
        store.set_meta(session, LLM_CALLS_KEY, f"{_today(settings)} {client.calls}")
    client.new_answers.clear()


def build_classifier(
    settings: Settings, store: Store | None, *, dry_run: bool = False, use_llm: bool = True
) -> LayeredClassifier:
    """Corrections, rules, the model and (if configured and wanted) the LLM, stacked."""
    try:
        rules = KeywordClassifier(settings.classifier.rules_file or None)
    except RulesError as err:
        raise ConfigError(f"classifier.rules_file: {err}") from None
    overrides = Overrides(
        Correction(c.pattern, c.action, c.title) for c in (corrections(store) if store else [])
    )
    return LayeredClassifier(
        rules=rules,
        model=_model(settings),
        overrides=overrides,
        llm=llm_client(settings, store, dry_run=dry_run) if use_llm else None,
    )


@dataclass
class TrainReport:
    path: Path
    examples: int
    corrections: int
    labels: int


def retrain(
    settings: Settings | None,
    store: Store | None,
    *,
    out: Path | None = None,
    training_set: Path | None = None,
) -> TrainReport:
    """Fit the model on the training set plus the stored corrections and save it."""
    source = training_set or bundled_training_set()
    try:
        pairs = read_labelled(source)
    except (OSError, ModelError) as err:
        raise InputError(str(err)) from None
    fixes = [(c.title, c.action) for c in (corrections(store) if store else [])]
    if out is None:
        if settings is None:
            raise InputError("say where to write the model (--out)")
        out = local_model_path(settings)
    model = train(pairs, extra_weight=fixes)
    # The model learnt from the person's corrected titles: private like the rest.
    private_dir(Path(out).parent)
    save(model, out)
    os.chmod(out, FILE_MODE)
    return TrainReport(out, len(pairs), len(fixes), len(model.labels))


def retrain_if_corrected(settings: Settings, store: Store) -> bool:
    """Retrain the local model when the corrections changed since it was trained."""
    if settings.classifier.model_file:
        return False  # the person chose a model file; leave it alone
    fixes = [(c.title, c.action) for c in corrections(store)]
    path = local_model_path(settings)
    if not fixes and not path.exists():
        return False
    try:
        current = load_model(path).meta.get("corrections_digest") if path.exists() else None
    except ModelError:
        current = None
    if current == corrections_digest(fixes):
        return False
    retrain(settings, store)
    log.info("classifier model retrained with %d corrections", len(fixes))
    return True


CLASSIFIER_VERSION_KEY = "classifier.version"
# What each calendar leaned to when its events were last labelled: a calendar whose lean
# moves has all its events labelled again.
CALENDAR_LEANS_KEY = "classifier.calendar_leans"


# A title met this often in the person's calendar repeats like a series even when written
# out as lone events (a timetable export writes each week's class as its own event): it is
# read as recurring. Chosen before measuring: three makes a habit, two may be a rebooking.
REPEATS = 3
# A cycle reads the group of every standing title twice (to count repeats, to find a
# changed row's group mates), and a calendar's titles are mostly the same few: each
# distinct title's key is worked out once per process.
_group_of = lru_cache(maxsize=16_384)(group_key)


def event_infos(
    rows: Sequence[CalendarEvent],
    settings: Settings,
    standing: Iterable[Standing] | None = None,
    leans: Mapping[str, str] | None = None,
) -> list[EventInfo]:
    """What the classifier may look at of each stored event, with how often its title
    recurs among the `standing` events (by default the rows themselves) and what its
    calendar leans to (`calendar_leans`)."""
    titles = (ev.title for ev in (rows if standing is None else standing))
    seen = Counter(_group_of(t) for t in titles)
    leans = leans or {}
    return [
        event_info(
            ev, settings, seen[_group_of(ev.title)] >= REPEATS, leans.get(ev.calendar_id, "")
        )
        for ev in rows
    ]


@dataclass(frozen=True, slots=True)
class Standing:
    """A stored event that still stands: what repeats and calendar leans are read from (a
    cancelled row may be an event's old copy: a re-read that changed its key cancels the
    old row and adds a new one)."""

    id: int
    title: str
    calendar_id: str


def _standing(session: Session) -> list[Standing]:
    stmt = select(
        col(CalendarEvent.id), col(CalendarEvent.title), col(CalendarEvent.calendar_id)
    ).where(col(CalendarEvent.status) != "cancelled")
    return [Standing(i, t, c) for i, t, c in session.execute(stmt) if i is not None]


def stored_standing(store: Store) -> list[Standing]:
    """The person's standing events (see Standing)."""
    with store.session() as session:
        return _standing(session)


def _stored_leans(store: Store) -> dict[str, str]:
    """The leans the last labelling saw; none (so every leaning calendar is labelled
    again) when the value is missing or unreadable."""
    try:
        leans = json.loads(store.get_meta(CALENDAR_LEANS_KEY) or "{}")
    except ValueError:
        return {}
    return {str(c): str(a) for c, a in leans.items()} if isinstance(leans, dict) else {}


def calendar_leans(classifier: LayeredClassifier, standing: Iterable[Standing]) -> dict[str, str]:
    """calendar id -> the action its standing titles lean to, for calendars that lean."""
    titles: dict[str, set[str]] = defaultdict(set)
    for ev in standing:
        titles[ev.calendar_id].add(ev.title)
    return {
        cal: lean
        for cal, held in sorted(titles.items())
        if (lean := classifier.calendar_lean(held))
    }


def _group_mates(
    session: Session, rows: Sequence[CalendarEvent], standing: list[Standing], calendars: set[str]
) -> list[CalendarEvent]:
    """The standing events that share a title group with `rows`, or a calendar in
    `calendars` (whose lean changed), but are not among them: whether a title repeats
    depends on its whole group (a third "Kurs" makes the first two a weekly block), so
    they are labelled again with it."""
    groups = {_group_of(r.title) for r in rows}
    have = {r.id for r in rows}
    ids = [
        ev.id
        for ev in standing
        if ev.id not in have and (ev.calendar_id in calendars or _group_of(ev.title) in groups)
    ]
    mates: list[CalendarEvent] = []
    for at in range(0, len(ids), 500):
        stmt = select(CalendarEvent).where(col(CalendarEvent.id).in_(ids[at : at + 500]))
        mates += session.execute(stmt).scalars()
    return mates


def event_info(
    ev: CalendarEvent, settings: Settings, repeats: bool = False, lean: str = ""
) -> EventInfo:
    """What the classifier may look at of a stored event; `repeats`: its title recurs in
    the calendar, `lean`: what its calendar leans to (see event_infos)."""
    return EventInfo(
        title=ev.title,
        event_type=ev.event_type,
        all_day=ev.all_day,
        attendee_count=ev.attendee_count,
        transparency=ev.transparency,
        duration_min=(ev.end_utc - ev.start_utc).total_seconds() / 60,
        start_hour=ev.start_utc.astimezone(settings.tz).hour,
        weekday=ev.start_utc.astimezone(settings.tz).weekday(),
        recurring=bool(ev.recurrence_id) or repeats,
        calendar_kind=calendar_kind(ev.calendar_id),
        self_response=ev.self_response,
        calendar_name=calendar_name(ev.calendar_id),
        location=ev.location,
        organized_by_me=ev.organized_by_me,
        calendar_lean=lean,
    )


def classify_events(store: Store, settings: Settings) -> int:
    """Label every event that is new or changed since it was last labelled.

    Everything is labelled again when the classifier itself changed (rules, model or a
    correction); UNCLASSIFIED events are retried while an LLM is configured.
    """
    from mappings.actions import UNCLASSIFIED

    retrain_if_corrected(settings, store)
    classifier = build_classifier(settings, store)
    version = classifier.version
    changed = store.get_meta(CLASSIFIER_VERSION_KEY) != version
    stmt = select(CalendarEvent)
    if not changed:
        todo = col(CalendarEvent.classified_hash) != col(CalendarEvent.content_hash)
        if classifier.llm is not None:
            todo = todo | (CalendarEvent.action == UNCLASSIFIED)
        stmt = stmt.where(todo)
    with store.session() as session:
        rows = list(session.execute(stmt).scalars())
        standing = _standing(session) if rows else []
        leans = calendar_leans(classifier, standing) if rows else {}
        if rows and not changed:
            before = _stored_leans(store)
            moved = {c for c in leans.keys() | before.keys() if leans.get(c) != before.get(c)}
            rows += _group_mates(session, rows, standing, moved)
    # Classify outside the write transaction: an LLM call may take seconds.
    results = classifier.classify_many(event_infos(rows, settings, standing, leans))
    relabelled = 0
    with store.transaction() as session:
        for ev, result in zip(rows, results, strict=True):
            new = (result.action, result.confidence, result.layer, ev.content_hash)
            if (ev.action, ev.action_confidence, ev.action_layer, ev.classified_hash) == new:
                continue
            # Only if the event is unchanged since it was read (a sync may run meanwhile).
            relabelled += rows_changed(
                session.execute(
                    update(CalendarEvent)
                    .where(CalendarEvent.id == ev.id, CalendarEvent.content_hash == ev.content_hash)
                    .values(
                        action=result.action,
                        action_confidence=result.confidence,
                        action_layer=result.layer,
                        classified_hash=ev.content_hash,
                    )
                )
            )
        if changed:
            store.set_meta(session, CLASSIFIER_VERSION_KEY, version)
        if rows:
            store.set_meta(session, CALENDAR_LEANS_KEY, json.dumps(leans, sort_keys=True))
    save_llm_state(store, settings, classifier.llm)  # type: ignore[arg-type]
    return relabelled
