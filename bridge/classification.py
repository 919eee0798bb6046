"""The layered classifier wired to one installation: corrections and the LLM cache in the
store, the retrained model in the data dir, the LLM client from the config.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import delete, select

from bridge.config import Settings
from bridge.errors import ConfigError, InputError
from bridge.store import Store, upsert
from bridge.store.db import utcnow
from bridge.store.models import ClassifierCorrection, LLMAnswer
from mappings.classifier import LABELS, KeywordClassifier, RulesError
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
from mappings.classifier_overrides import Correction, Overrides, title_pattern

if TYPE_CHECKING:
    from bridge.llm_client import LLMClient

log = logging.getLogger("rhythm_bridge.classifier")

LOCAL_MODEL = "classifier_model.npz"
LLM_CALLS_KEY = "classifier.llm_calls"


def local_model_path(settings: Settings) -> Path:
    """Where the model retrained from the person's corrections lives."""
    return settings.data_path / LOCAL_MODEL


def add_correction(
    store: Store, title: str, action: str, *, channel: str = "cli", now: datetime | None = None
) -> Correction:
    """Store "events titled like this are ACTION"; it wins from the next classification on."""
    action = action.strip().upper()
    if action not in LABELS:
        raise InputError(f"unknown action {action!r}; use one of {', '.join(sorted(LABELS))}")
    pattern = title_pattern(title)
    if not pattern.replace("*", "").strip():
        raise InputError("a correction needs a title with at least one letter or number")
    now = now or utcnow()
    row = {
        "pattern": pattern,
        "title": title.strip(),
        "action": action,
        "channel": channel,
        "created_at": now,
        "updated_at": now,
    }
    with store.transaction() as session:
        upsert(
            session,
            ClassifierCorrection,
            [row],
            keys=("pattern",),
            update=("action", "title", "channel"),
            touch=("updated_at",),
        )
    return Correction(pattern, action)


def remove_correction(store: Store, title: str) -> bool:
    """Forget the correction stored for titles like this one; False if there was none."""
    pattern = title_pattern(title)
    with store.transaction() as session:
        gone = session.execute(
            delete(ClassifierCorrection).where(ClassifierCorrection.pattern == pattern)
        )
        return bool(gone.rowcount)


def corrections(store: Store) -> list[ClassifierCorrection]:
    """Every stored correction, oldest change first (so later ones win)."""
    with store.session() as session:
        stmt = select(ClassifierCorrection).order_by(
            ClassifierCorrection.updated_at, ClassifierCorrection.id
        )
        return list(session.execute(stmt).scalars())


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
    from bridge.llm_client import LLMClient
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
            rows = session.execute(select(LLMAnswer).where(LLMAnswer.model == client.model))
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
    settings: Settings, store: Store | None, *, dry_run: bool = False
) -> LayeredClassifier:
    """Corrections, rules, the model and (if configured) the LLM, stacked."""
    try:
        rules = KeywordClassifier(settings.classifier.rules_file or None)
    except RulesError as err:
        raise ConfigError(f"classifier.rules_file: {err}") from None
    overrides = Overrides(
        Correction(c.pattern, c.action) for c in (corrections(store) if store else [])
    )
    return LayeredClassifier(
        rules=rules,
        model=_model(settings),
        overrides=overrides,
        llm=llm_client(settings, store, dry_run=dry_run),
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
    save(model, out)
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
