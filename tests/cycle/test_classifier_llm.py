"""The optional LLM layer against respx: real-shaped Ollama and OpenAI-compatible replies."""

import json

import httpx
import pytest
import respx

from bridge.config import Settings
from bridge.cycle.classify import LLM_CALLS_KEY, llm_client, save_llm_state
from bridge.cycle.llm_client import LLMClient
from bridge.errors import ConfigError
from bridge.store.models import LLMAnswer
from mappings.classifier import EventInfo
from mappings.classifier_llm import SCHEMA, LLMReplyError, detect_api, parse_reply

OLLAMA = "http://localhost:11434"
OPENAI = "http://localhost:8080/v1"


def ollama_reply(content: str) -> dict:
    # Shape of a non-streaming /api/chat answer (ollama docs/api.md).
    return {
        "model": "llama3.2",
        "created_at": "2026-11-22T08:00:00.123456Z",
        "message": {"role": "assistant", "content": content},
        "done_reason": "stop",
        "done": True,
        "total_duration": 4883583458,
        "load_duration": 1334875,
        "prompt_eval_count": 312,
        "prompt_eval_duration": 342546000,
        "eval_count": 14,
        "eval_duration": 453559900,
    }


def openai_reply(content: str) -> dict:
    # Shape of a /v1/chat/completions answer (llama.cpp server, vLLM, LM Studio).
    return {
        "id": "chatcmpl-8d9f",
        "object": "chat.completion",
        "created": 1795334400,
        "model": "qwen2.5-3b-instruct",
        "system_fingerprint": "b4273",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 318, "completion_tokens": 15, "total_tokens": 333},
    }


GOOD = '{"action": "EXERCISE", "confidence": 0.92}'


def client(api="ollama", **kw) -> LLMClient:
    endpoint = OLLAMA if api == "ollama" else OPENAI
    kw.setdefault("timeout", 2.0)
    return LLMClient(endpoint=endpoint, model="llama3.2", api=api, **kw)


@respx.mock
def test_ollama_chat_with_a_schema_format():
    route = respx.post(f"{OLLAMA}/api/chat").respond(json=ollama_reply(GOOD))
    result = client().ask(EventInfo("Zorblax", attendee_count=1, duration_min=45, start_hour=7))
    assert (result.action, result.confidence, result.layer) == ("EXERCISE", 0.92, "llm")
    body = json.loads(route.calls.last.request.content)
    assert body["format"] == SCHEMA and body["stream"] is False and body["model"] == "llama3.2"
    sent = json.loads(body["messages"][1]["content"])
    assert sent == {"title": "Zorblax", "attendees": 1, "duration_minutes": 45, "starts_at_hour": 7}


@respx.mock
def test_openai_compatible_chat_with_a_json_schema_response_format():
    route = respx.post(f"{OPENAI}/chat/completions").respond(json=openai_reply(GOOD))
    assert client("openai").ask(EventInfo("Zorblax")).action == "EXERCISE"
    body = json.loads(route.calls.last.request.content)
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == SCHEMA


@pytest.mark.parametrize(
    ("api", "content"),
    [
        ("ollama", "Sure! The action is EXERCISE."),
        ("openai", '{"action": "GYM", "confidence": 0.9}'),
        ("ollama", '{"action": "EXERCISE", "confidence": 7}'),
        ("openai", '{"action": "EXERCISE"}'),
    ],
)
@respx.mock
def test_a_reply_that_is_not_valid_json_for_the_schema_is_no_answer(api, content):
    reply = ollama_reply(content) if api == "ollama" else openai_reply(content)
    path = f"{OLLAMA}/api/chat" if api == "ollama" else f"{OPENAI}/chat/completions"
    respx.post(path).respond(json=reply)
    llm = client(api)
    assert llm.ask(EventInfo("Zorblax")) is None
    assert llm.errors == 1 and llm.cache == {}  # not cached: asked again next time


@pytest.mark.parametrize(
    "effect",
    [
        httpx.ReadTimeout("timed out"),
        httpx.ConnectError("connection refused"),
        httpx.Response(500, text="model runner crashed"),
        httpx.Response(200, text="<html>proxy</html>"),
    ],
)
@respx.mock
def test_timeouts_server_errors_and_garbage_are_no_answer(effect):
    route = respx.post(f"{OLLAMA}/api/chat")
    if isinstance(effect, httpx.Response):
        route.mock(return_value=effect)
    else:
        route.mock(side_effect=effect)
    llm = client()
    assert llm.ask(EventInfo("Zorblax")) is None
    assert llm.errors == 1 and llm.calls == 1


@respx.mock
def test_a_server_that_keeps_failing_is_left_alone_for_the_rest_of_the_run():
    route = respx.post(f"{OLLAMA}/api/chat").mock(side_effect=httpx.ConnectTimeout("down"))
    llm = client()
    assert all(llm.ask(EventInfo(f"Title {i}")) is None for i in range(10))
    assert route.call_count == 3


@respx.mock
def test_one_good_answer_resets_the_failure_count():
    route = respx.post(f"{OLLAMA}/api/chat")
    route.side_effect = [
        httpx.Response(500),
        httpx.Response(500),
        httpx.Response(200, json=ollama_reply(GOOD)),
        httpx.Response(500),
        httpx.Response(500),
        httpx.Response(200, json=ollama_reply(GOOD)),
    ]
    llm = client()
    answers = [llm.ask(EventInfo(f"Title {w}")) for w in ("a", "b", "c", "d", "e", "f")]
    assert [a is not None for a in answers] == [False, False, True, False, False, True]


def test_the_timeout_is_passed_to_httpx():
    llm = client(timeout=3.5)
    assert llm._http().timeout.read == 3.5
    llm.close()


@respx.mock
def test_answers_are_cached_by_normalized_title():
    route = respx.post(f"{OLLAMA}/api/chat").respond(json=ollama_reply(GOOD))
    llm = client()
    first = llm.ask(EventInfo("Zorblax Café"))
    again = llm.ask(EventInfo("  zorblax   CAFE "))
    assert first.action == again.action == "EXERCISE" and again.rule == "cached"
    assert route.call_count == 1 and llm.calls == 1


@respx.mock
def test_unsure_answers_are_cached_but_not_used():
    route = respx.post(f"{OLLAMA}/api/chat").respond(
        json=ollama_reply('{"action": "UNCLASSIFIED", "confidence": 0.9}')
    )
    llm = client()
    assert llm.ask(EventInfo("Zorblax")) is None and llm.ask(EventInfo("Zorblax")) is None
    assert route.call_count == 1


@respx.mock
def test_the_daily_budget_stops_calls():
    route = respx.post(f"{OLLAMA}/api/chat").respond(json=ollama_reply(GOOD))
    llm = client(budget=2)
    answers = [llm.ask(EventInfo(f"Title {word}")) for word in ("one", "two", "three", "four")]
    assert [a is not None for a in answers] == [True, True, False, False]
    assert route.call_count == 2
    assert llm.ask(EventInfo("Title one")).action == "EXERCISE"  # cached answers stay free


@respx.mock(assert_all_called=False)
def test_a_dry_run_sends_nothing_and_shows_the_request(respx_mock):
    llm = client(dry_run=True)
    assert llm.ask(EventInfo("Zorblax")) is None
    assert respx_mock.calls.call_count == 0
    [shown] = llm.would_send
    assert shown.url == f"{OLLAMA}/api/chat" and shown.body["messages"][1]["content"]


def test_parse_reply_names_what_is_missing():
    with pytest.raises(LLMReplyError, match="no message content"):
        parse_reply("openai", {"choices": []})


def test_the_dialect_follows_the_endpoint():
    assert detect_api("http://localhost:11434") == "ollama"
    assert detect_api("http://localhost:8000/v1/") == "openai"


# --- wiring: settings and store ---------------------------------------------------------


def _with_llm(settings: Settings, **kw) -> Settings:
    data = settings.model_dump()
    data["classifier"].update(kw)
    return Settings.model_validate(data)


def test_no_endpoint_no_llm_layer(settings, store):
    assert llm_client(settings, store) is None
    with pytest.raises(ConfigError, match=r"classifier\.llm_model"):
        llm_client(_with_llm(settings, llm_endpoint=OLLAMA), store)


@respx.mock
def test_cache_and_budget_survive_a_restart(settings, store):
    route = respx.post(f"{OLLAMA}/api/chat").respond(json=ollama_reply(GOOD))
    cfg = _with_llm(settings, llm_endpoint=OLLAMA, llm_model="llama3.2", llm_daily_budget=1)
    first = llm_client(cfg, store)
    assert first.ask(EventInfo("Zorblax")).action == "EXERCISE"
    save_llm_state(store, cfg, first)
    assert store.count(LLMAnswer) == 1
    second = llm_client(cfg, store)
    assert second.calls == 1 and second.ask(EventInfo("zorblax")).rule == "cached"
    assert second.ask(EventInfo("Another title")) is None  # today's budget is spent
    assert route.call_count == 1


def test_the_budget_starts_again_the_next_day(settings, store):
    cfg = _with_llm(settings, llm_endpoint=OLLAMA, llm_model="llama3.2", llm_daily_budget=5)
    with store.transaction() as session:
        store.set_meta(session, LLM_CALLS_KEY, "2000-01-01 5")
    assert llm_client(cfg, store).calls == 0


@pytest.mark.parametrize(
    ("title", "language"),
    [
        ("Zebranie w przedszkolu", "Polish"),
        ("定例ミーティング", "Japanese"),
        ("팀 회의", "Korean"),
        ("组会", "Chinese"),
        ("Schůzka týmu", "Czech"),
        ("Toplantı", "Turkish"),
        ("Dinner with the team", "English"),
        ("Réunion avec le client", "French"),
        ("Xq-77", ""),  # a title that does not say is sent without a guess
    ],
)
def test_the_request_names_the_titles_language(title, language):
    from mappings.classifier_llm import describe

    doc = describe(EventInfo(title))
    assert doc.get("language", "") == language


@respx.mock
def test_answers_are_cached_per_title_group():
    route = respx.post(f"{OLLAMA}/api/chat").respond(json=ollama_reply(GOOD))
    llm = client()
    assert llm.ask(EventInfo("Zorblax")).action == "EXERCISE"
    assert llm.ask(EventInfo("Zorblax 18:00")).rule == "cached"
    assert llm.ask(EventInfo("Zorblax odwołany")).rule != "cached"
    assert route.call_count == 2


@respx.mock(assert_all_called=False)
def test_a_dry_run_shows_only_what_rules_context_and_answers_leave(respx_mock):
    from mappings.classifier import KeywordClassifier
    from mappings.classifier_layers import LayeredClassifier
    from mappings.classifier_model import load
    from mappings.classifier_overrides import Correction, Overrides

    llm = client(dry_run=True)
    over = Overrides([Correction("krumpel", "ME_TIME", "Krumpel")])
    clf = LayeredClassifier(KeywordClassifier(), load(), over, llm)
    clf.classify_many(
        [
            EventInfo("Team standup"),  # a rule
            EventInfo("Krumpel 18:00"),  # the person's answer
            EventInfo("Xq-77", all_day=True),  # context: a marker
            EventInfo("Xq-77 z Kubą"),  # left: sent
        ]
    )
    assert respx_mock.calls.call_count == 0
    [shown] = llm.would_send
    sent = json.loads(shown.body["messages"][1]["content"])
    assert sent == {"title": "Xq-77 z Kubą", "language": "Polish"}
    assert "being taught" in shown.body["messages"][0]["content"]  # the rubric's words


def test_the_request_carries_the_events_shape_and_day():
    from mappings.classifier_llm import describe

    doc = describe(EventInfo("Xq-77", duration_min=90, start_hour=18, weekday=1, recurring=True))
    assert doc == {
        "title": "Xq-77",
        "duration_minutes": 90,
        "starts_at_hour": 18,
        "weekday": "Tuesday",
        "repeats": True,
    }
