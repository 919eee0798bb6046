"""`rhythm-bridge export --training-data FILE`: the person's answers as a chat-format
JSONL fine-tuning set (for people who LoRA-tune an LLM runner on their own data).

One line per answered recommendation: the same system and user messages the `openai`
runner sends (the seed's in-context format), the assistant turn that was recommended
(reasoning line, then `S M W ACTION`), and the answer as reward (+1 accepted, -1
ignored or rescheduled). Unanswered (expired) recommendations are left out.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlmodel import col

from bridge.clock import current_slot
from bridge.errors import InputError
from bridge.files import private_dir
from bridge.learning.feedback import REWARD
from bridge.learning.history import HISTORY_DAYS, interaction_history
from bridge.runner.prompt import SYSTEM, build_prompt
from bridge.store.models import Feedback, Recommendation

NEUTRAL_BELIEF = (0.5, 0.5, 0.5)  # for runners that state none (heuristic, random)


def _digits(belief: Any) -> str:
    values = belief if isinstance(belief, list) and len(belief) == 3 else NEUTRAL_BELIEF
    return " ".join(str(min(9, max(0, round(float(v) * 9)))) for v in values)


def training_examples(store: Any, settings: Any) -> Iterator[dict[str, Any]]:
    """One chat example per answered recommendation, oldest first."""
    now_key = current_slot(settings, datetime.now(UTC))
    everything = interaction_history(store, now_key.next(), days=3650, with_dates=True)
    with store.session() as session:
        rows = session.execute(
            select(Recommendation, Feedback)
            .join(Feedback, col(Feedback.recommendation_id) == col(Recommendation.id))
            .order_by(col(Recommendation.local_date), col(Recommendation.slot))
        ).all()
    for rec, fb in rows:
        if fb.response not in REWARD or fb.response == "expired":
            continue
        lo = rec.local_date - timedelta(days=HISTORY_DAYS)
        history = [
            {k: v for k, v in h.items() if k != "local_date"}
            for h in everything
            if lo <= date.fromisoformat(h["local_date"]) <= rec.local_date
            and (date.fromisoformat(h["local_date"]), h["slot"]) < (rec.local_date, rec.slot)
        ]
        observation = json.loads(rec.observation or "{}")
        reason = rec.rationale or f"Recommended {rec.action}"
        answer = f"{reason}\n{_digits(json.loads(rec.belief))} {rec.action}"
        yield {
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": build_prompt(observation, history)},
                {"role": "assistant", "content": answer},
            ],
            "reward": REWARD[fb.response],
            "response": fb.response,
            "date": rec.local_date.isoformat(),
            "slot": rec.slot,
            "runner": rec.runner,
        }


def write_training_data(store: Any, settings: Any, path: Path) -> int:
    """Write the JSONL file atomically (mode 0600: it is about the person); return lines."""
    path = path.expanduser()
    if path.is_dir():
        raise InputError(f"{path}: is a directory; give a file name for the training data")
    private_dir(path.parent)
    tmp = path.with_name(path.name + ".tmp")
    count = 0
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for example in training_examples(store, settings):
                fh.write(json.dumps(example, ensure_ascii=False) + "\n")
                count += 1
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return count
