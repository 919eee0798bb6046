"""Layer 4 without the wire: what the optional LLM is asked, and how its answer is checked.

Two dialects: Ollama's `/api/chat` (`format` = a JSON Schema) and the OpenAI-compatible
`/v1/chat/completions` (`response_format` = `json_schema`), which llama.cpp, vLLM, LM
Studio and Ollama all speak. Enforcement of the schema differs between servers, so every
reply is validated here before it is believed.
"""

from __future__ import annotations

import calendar
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mappings.actions import ACTIONS, NOT_AN_ACTION, UNCLASSIFIED
from mappings.classifier import HANGUL, EventInfo, normalize, tokens, unspaced
from mappings.classifier_overrides import group_key

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
    "You label one calendar event with what the person does in that slot (the project's "
    'labelling rubric). Answer in JSON only, as {"action": ..., "confidence": 0..1}. '
    "DEEP_WORK: focused work of one's own (writing, coding, building, analysis, project "
    "sessions). ADMIN_WORK: meetings, calls, coordination, paperwork, invoices, e-mail; "
    "errands and household chores; appointments with a doctor, lawyer or authority; work "
    "shifts. LEARN: being taught or studying: lectures, seminars, classes, tutorials, lab "
    "sessions, courses, workshops, talks and conferences one attends. EXERCISE: training, "
    "gym, running, swimming, walking the dog, physiotherapy, one's own amateur team's "
    "matches. MEDITATE: meditation, prayer, worship services, journaling. FAMILY_TIME: "
    "with one's own family: children's activities, family meals and visits, school events "
    "for parents. SOCIALIZE: with others for the company: parties, meals and drinks with "
    "friends, weddings, funerals, club activities, concerts, exhibitions, markets. "
    "ME_TIME: personal care, hobbies, music, cooking for oneself, time off for oneself. "
    "SLEEP: sleep, naps. BINGE_WATCH: TV, films, series, cinema, watching professional "
    "sport. NOT_AN_ACTION: nothing chosen: holidays and observances, someone's birthday, "
    "vacation and out-of-office markers, flights and travel, deadlines and reminders, "
    "waste collection, cancelled events, titles too vague to tell. Tie-breakers: a party "
    "held on a holiday is SOCIALIZE; being taught beats the subject (a programming "
    "lecture is LEARN); a meeting is ADMIN_WORK unless it is social or a class. "
    "Use UNCLASSIFIED when unsure. The title may be in any language; `language` is a "
    "guess from its letters and words."
)

# Letters that only one language (or a few) writes, then short words frequent in titles.
_LETTERS = (
    ("Polish", "łśźżąęńć"),
    ("Czech", "řěů"),
    ("Turkish", "ışğ"),
    ("Portuguese", "ãõ"),
    ("Spanish", "ñ¿¡"),
    ("German", "ß"),
    ("Danish or Norwegian", "æø"),
    ("Swedish, Danish or Norwegian", "å"),
)
_WORDS = {
    "English": {"the", "with", "and", "for", "to", "of", "at", "meeting", "call"},
    "German": {"mit", "und", "der", "die", "das", "fur", "im", "am", "zum", "zur", "bei"},
    "French": {"avec", "et", "le", "la", "les", "du", "des", "au", "pour", "chez"},
    "Spanish": {"con", "y", "el", "los", "las", "del", "para", "reunion"},
    "Italian": {"con", "il", "della", "di", "per", "gli", "alla", "riunione"},
    "Dutch": {"met", "en", "het", "de", "van", "voor", "bij", "naar"},
    "Portuguese": {"com", "do", "da", "dos", "das", "para", "no", "na", "reuniao"},
    "Polish": {"z", "w", "na", "i", "do", "ze", "u"},
    "Czech": {"s", "v", "a", "se", "ve", "k"},
    "Swedish": {"med", "och", "pa", "for", "till", "hos"},
    "Danish or Norwegian": {"med", "og", "pa", "til", "hos"},
    "Finnish": {"ja", "kanssa", "klo"},
    "Turkish": {"ile", "ve", "icin"},
}


def title_language(title: str) -> str:
    """A guess at the title's language from its script, letters and short words; "" when
    the title does not say (most short titles)."""
    if unspaced(title):
        if re.search(f"[{HANGUL}]", title):
            return "Korean"
        return "Japanese" if any("\u3040" <= ch <= "\u30ff" for ch in title) else "Chinese"
    low = title.casefold()
    if any("\u0400" <= ch <= "\u04ff" for ch in low):
        return "Ukrainian" if any(ch in "іїєґ" for ch in low) else "Russian"
    for language, letters in _LETTERS:
        if any(ch in letters for ch in low):
            return language
    words = set(tokens(normalize(title)))
    scores = {lang: len(words & common) for lang, common in _WORDS.items()}
    best = max(scores.values())
    found = [lang for lang, n in scores.items() if n == best]
    return found[0] if best and len(found) == 1 else ""


class LLMReplyError(ValueError):
    """The server answered, but not with a usable label; the message says what was wrong."""


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal[CHOICES]  # type: ignore[valid-type]
    confidence: float = Field(ge=0.0, le=1.0)


def cache_key(title: str) -> str:
    """Answers are cached per title group ("Trening", "Trening 18:00" share one answer;
    mappings.classifier_overrides.group_key), cut to the stored column's width."""
    return group_key(title)[:500]


def describe(event: EventInfo) -> dict[str, Any]:
    """The event as the model sees it: the title plus the shape of the event, nothing else."""
    doc: dict[str, Any] = {"title": event.title}
    if language := title_language(event.title):
        doc["language"] = language
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
    if event.weekday is not None:
        doc["weekday"] = calendar.day_name[event.weekday]
    if event.recurring:
        doc["repeats"] = True
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
