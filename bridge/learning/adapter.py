"""Phase 3: refit the bundled model's per-user adapter weekly from the stored answers.

The adapter itself (its format, fitting and loading) lives with the model, in
`bridge.runner.adapter`; this module reads the answers and writes the file.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from bridge.files import write_private
from bridge.runner.adapter import fit_adapter
from bridge.runner.features import RESPONSE_VALUE

log = logging.getLogger("rhythm_bridge.adapter")


ADAPTER_FILE = "adapter.json"


MIN_ANSWERS = 20  # fewer answers than this teach the prior nothing it cannot read in context


def refit(store: Any, settings: Any, now: datetime | None = None) -> dict[str, Any] | None:
    """Refit the adapter from every stored answer; None (and no file) if too few yet."""
    from bridge.clock import current_slot
    from bridge.learning.history import interaction_history
    from bridge.runner.bundled import load_model

    now = now or datetime.now(UTC)
    key = current_slot(settings, now)
    history = interaction_history(store, key, days=365, with_dates=True)
    answered = [h for h in history if h["response"] in RESPONSE_VALUE]
    if len(answered) < MIN_ANSWERS:
        log.info("adapter: %d answers so far, need %d; not refitted", len(answered), MIN_ANSWERS)
        return None
    model = load_model(settings.runner.options.get("model"))
    doc = fit_adapter(history, model)
    doc["through"] = max(h["local_date"] for h in answered)
    doc["fitted_at"] = now.astimezone(UTC).isoformat()
    path = settings.person_path / ADAPTER_FILE
    write_private(path, json.dumps(doc, indent=2).encode())
    log.info("adapter: refitted from %d answers -> %s", len(answered), path)
    return doc
