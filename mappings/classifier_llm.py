"""Layer 4 without the wire: what the optional LLM is asked, and how its answer is checked.

Two dialects: Ollama's `/api/chat` (`format` = a JSON Schema) and the OpenAI-compatible
`/v1/chat/completions` (`response_format` = `json_schema`), which llama.cpp, vLLM, LM
Studio and Ollama all speak. Enforcement of the schema differs between servers, so every
reply is validated here before it is believed.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mappings.actions import ACTIONS, NOT_AN_ACTION, UNCLASSIFIED
from mappings.classifier import EventInfo, normalize

Api = Literal["ollama", "openai"]
CHOICES = (*ACTIONS, NOT_AN_ACTION, UNCLASSIFIED)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(CHOICES)},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["action", "confidence"],
    "additionalProperties": False,
}

SYSTEM = (
    "You label one calendar event with what the person does in it. Answer in JSON only, "
    'as {"action": ..., "confidence": 0..1}. Actions: DEEP_WORK (focused solo work: '
    "writing, coding, analysis), ADMIN_WORK (meetings, calls, email, errands, appointments, "
    "paperwork), LEARN (courses, lessons, studying), EXERCISE (sport, gym, runs, walks), "
    "MEDITATE (meditation, journaling, breathwork, prayer), FAMILY_TIME (partner, children, "
    "parents, relatives), SOCIALIZE (friends, colleagues socially, parties, 1:1s), ME_TIME "
    "(personal time, hobbies, reading for fun, self-care, protected blocks), SLEEP (sleep, "
    "naps, rest days), BINGE_WATCH (TV, films, streaming, video games). Use NOT_AN_ACTION "
    "for markers that are not an activity: holidays, out of office, travel, flights, hotel "
    "stays, working location, other people's birthdays. Use UNCLASSIFIED when unsure. "
    "Titles may be in any language."
)


class LLMReplyError(ValueError):
    """The server answered, but not with a usable label; the message says what was wrong."""


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal[CHOICES]  # type: ignore[valid-type]
    confidence: float = Field(ge=0.0, le=1.0)


def cache_key(title: str) -> str:
    """Answers are cached per normalized title (cut to the stored column's width)."""
    return normalize(title)[:500]


def describe(event: EventInfo) -> dict[str, Any]:
    """The event as the model sees it: the title plus the shape of the event, nothing else."""
    doc: dict[str, Any] = {"title": event.title}
    if event.event_type != "default":
        doc["event_type"] = event.event_type
    if event.all_day:
        doc["all_day"] = True
    if event.attendee_count:
        doc["attendees"] = event.attendee_count
    if event.duration_min is not None and not event.all_day:
        doc["duration_minutes"] = round(event.duration_min)
    if event.start_hour is not None:
        doc["starts_at_hour"] = event.start_hour
    if event.transparency == "transparent":
        doc["shows_as"] = "free"
    return doc


def request_body(api: Api, model: str, event: EventInfo) -> dict[str, Any]:
    """The JSON body of one classification request in the given dialect."""
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": json.dumps(describe(event), ensure_ascii=False)},
    ]
    if api == "ollama":
        return {
            "model": model,
            "messages": messages,
            "format": SCHEMA,
            "stream": False,
            "options": {"temperature": 0},
        }
    return {
        "model": model,
        "messages": messages,
        "temperature": 0,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "event_label", "strict": True, "schema": SCHEMA},
        },
    }


def request_path(api: Api) -> str:
    return "/api/chat" if api == "ollama" else "/chat/completions"


def parse_reply(api: Api, payload: Any) -> Answer:
    """The validated answer inside a server's reply, or LLMReplyError."""
    try:
        if api == "ollama":
            content = payload["message"]["content"]
        else:
            content = payload["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise LLMReplyError("reply has no message content") from None
    if not isinstance(content, str):
        raise LLMReplyError("message content is not text")
    try:
        return Answer.model_validate_json(content.strip())
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "reply"
        raise LLMReplyError(f"{where}: {first['msg']} in {content[:80]!r}") from None


def detect_api(endpoint: str) -> Api:
    """OpenAI-compatible when the endpoint ends in /v1 (the usual base URL), else Ollama."""
    path = endpoint.rstrip("/")
    return "openai" if path.endswith("/v1") or path.endswith("/chat/completions") else "ollama"
