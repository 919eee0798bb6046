import httpx
import pytest
import respx

from bridge.runner import load_runner
from bridge.runner.prompt import build_prompt, parse_answer

URL = "http://127.0.0.1:11434/v1/chat/completions"
OBS = {
    "timestep": 4,
    "day": 1,
    "slot": 0,
    "vitality": 0.68,
    "cognition": 0.6,
    "progress": 0.4,
    "serenity": 0.71,
    "connection": None,
}
HISTORY = [
    {
        "day": 0,
        "slot": 0,
        "meters": {
            "vitality": 0.7,
            "cognition": 0.6,
            "progress": 0.5,
            "serenity": 0.6,
            "connection": 0.5,
        },
        "action": "DEEP_WORK",
        "response": "ignored",
        "meter_deltas": {
            "vitality": -0.02,
            "cognition": None,
            "progress": 0.01,
            "serenity": 0.0,
            "connection": 0.0,
        },
    },
    {
        "day": 0,
        "slot": 1,
        "meters": {
            "vitality": 0.7,
            "cognition": 0.6,
            "progress": 0.5,
            "serenity": 0.6,
            "connection": 0.5,
        },
        "action": "EXERCISE",
        "response": "accepted",
        "meter_deltas": {},
    },
]


def completion(content: str) -> dict:
    """The shape Ollama's /v1/chat/completions returns (OpenAI chat.completion)."""
    return {
        "id": "chatcmpl-571",
        "object": "chat.completion",
        "created": 1763800000,
        "model": "qwen2.5:3b",
        "system_fingerprint": "fp_ollama",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 412, "completion_tokens": 61, "total_tokens": 473},
    }


def runner(**kw):
    return load_runner(
        "openai", endpoint="http://127.0.0.1:11434/v1", model="qwen2.5:3b", timeout=2, **kw
    )


def test_prompt_is_the_seed_in_context_format():
    text = build_prompt(OBS, HISTORY)
    assert text.startswith("Recent interactions (last 30 days):\n")
    assert (
        "Mon Morning, Vitality=0.70, Cognition=0.60, Progress=0.50, Serenity=0.60, "
        "Connection=0.50 -> recommended DEEP_WORK -> user: IGNORED (then Vitality-0.02, "
        "Progress+0.01, Serenity+0.00, Connection+0.00)"
    ) in text
    assert "Mon Afternoon" in text and "user: ACCEPTED\n" in text
    assert "Current state: Tuesday Morning, Vitality=0.68, Cognition=0.60" in text
    assert "Connection" not in text.split("Current state:")[1]  # unknown meters are left out
    assert text.endswith("Recommend an action:")


def test_parse_takes_the_last_valid_line():
    text = "Morning deep work was ignored -> late chronotype.\n9 9 9 NAP\n2 3 7 DEEP_WORK\nok"
    reason = "Morning deep work was ignored -> late chronotype."
    assert parse_answer(text) == ([2 / 9, 3 / 9, 7 / 9], "DEEP_WORK", reason)
    assert parse_answer("S M W ACTION\n10 2 3 SLEEP\nI think SLEEP") is None


@respx.mock
def test_openai_runner_uses_the_model_answer():
    answer = (
        "Morning DEEP_WORK was ignored while afternoon EXERCISE was accepted, so a late "
        "chronotype is likely.\n**Final:**\n`4 2 6 EXERCISE`"
    )
    route = respx.post(URL).mock(return_value=httpx.Response(200, json=completion(answer)))
    rec = runner().recommend(OBS, HISTORY)
    assert rec.action == "EXERCISE" and rec.runner == "openai" and rec.fallback_reason is None
    assert rec.belief == [round(4 / 9, 3), round(2 / 9, 3), round(6 / 9, 3)]
    assert (
        rec.rationale.startswith("Morning DEEP_WORK was ignored")
        and "late chronotype" in rec.rationale
    )
    sent = route.calls.last.request
    body = __import__("json").loads(sent.content)
    assert body["model"] == "qwen2.5:3b" and body["messages"][0]["role"] == "system"
    assert body["messages"][1]["content"].endswith("Recommend an action:")
    assert "authorization" not in sent.headers  # no key in the keyring: none sent


@pytest.mark.parametrize(
    ("mock", "reason"),
    [
        (httpx.Response(200, json=completion("I would suggest resting today.")), "no valid"),
        (httpx.Response(200, json={"error": "model not found"}), "not a chat completion"),
        (httpx.Response(200, text="<html>proxy</html>"), "not a chat completion"),
        (httpx.Response(503, json={"error": "loading model"}), "HTTP 503"),
        (httpx.ConnectError("Connection refused"), "cannot reach"),
        (httpx.ReadTimeout("timed out"), "timed out after 2s"),
    ],
)
@respx.mock
def test_openai_runner_falls_back_to_bundled_and_says_why(mock, reason):
    route = respx.post(URL)
    route.mock(side_effect=mock) if isinstance(mock, Exception) else route.mock(return_value=mock)
    rec = runner().recommend(OBS, HISTORY)
    assert rec.runner == "bundled" and rec.belief is not None
    assert rec.fallback_reason.startswith("openai runner (qwen2.5:3b): ")
    assert reason in rec.fallback_reason


def test_openai_runner_needs_an_endpoint():
    with pytest.raises(ValueError, match=r"options\.endpoint"):
        load_runner("openai")


@respx.mock
def test_the_stored_recommendation_records_the_fallback(store, settings):
    from bridge.cycle.recommend import recommend
    from tests.conftest import DEMO_NOW

    respx.post(URL).mock(side_effect=httpx.ConnectError("Connection refused"))
    cfg = settings.model_copy(
        update={
            "runner": settings.runner.model_copy(
                update={
                    "name": "openai",
                    "options": {"endpoint": "http://127.0.0.1:11434/v1", "model": "qwen2.5:3b"},
                }
            )
        }
    )
    rec = recommend(store, cfg, DEMO_NOW)
    assert rec.id is not None and rec.runner == "bundled"
    assert rec.fallback_reason.startswith("openai runner (qwen2.5:3b): cannot reach")
    assert __import__("json").loads(rec.belief) is not None
