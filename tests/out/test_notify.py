"""ntfy and webhook notifications: payloads (respx), once per slot, retries, no leaks."""

from __future__ import annotations

import json
from datetime import timedelta

import httpx
import pytest
import respx
from sqlalchemy import select

from bridge.auth.access import ensure_access_token
from bridge.cycle.recommend import recommend
from bridge.cycle.run import announce, run_cycle
from bridge.out.notify import notify_recommendation, set_ntfy_token
from bridge.store import Store
from bridge.store.models import Notification, Recommendation
from tests.conftest import DEMO_NOW

NTFY = "https://ntfy.example.org"
HOOK = "https://hooks.example.org/rhythm/abc"


def configured(settings, **notify):
    return settings.model_copy(
        update={"notify": settings.notify.model_copy(update=notify)}, deep=True
    )


def the_rec(store: Store) -> Recommendation:
    with store.session() as s:
        return s.execute(select(Recommendation)).scalars().first()


@respx.mock
def test_ntfy_gets_accept_and_ignore_buttons_calling_back_with_the_token(demo, memory_keyring):
    settings, store = demo
    settings = configured(
        settings, ntfy_server=NTFY, ntfy_topic="rb-7f3a", callback_url="http://192.168.1.20:8765/"
    )
    access = ensure_access_token(settings)
    set_ntfy_token(settings, "tk_ntfy")
    route = respx.post(f"{NTFY}/").mock(return_value=httpx.Response(200, json={"id": "x"}))
    rec = the_rec(store)
    assert notify_recommendation(store, settings, rec, DEMO_NOW) == {"ntfy": "sent"}
    request = route.calls.last.request
    assert request.headers["authorization"] == "Bearer tk_ntfy"
    body = json.loads(request.content)
    assert body["topic"] == "rb-7f3a"
    # The window: from now (08:40) to the next busy event of the demo calendar (09:30).
    what = rec.action.replace("_", " ").lower()
    assert body["title"] == f"Next (morning 08:40-09:30): {what}"
    assert body["message"] == rec.rationale
    assert body["click"] == "http://192.168.1.20:8765/"
    accept, ignore, view = body["actions"]
    for action, response in ((accept, "accepted"), (ignore, "ignored")):
        assert action["action"] == "http" and action["method"] == "POST"
        assert action["url"] == "http://192.168.1.20:8765/api/feedback"
        assert action["headers"]["Authorization"] == f"Bearer {access}"
        assert json.loads(action["body"]) == {
            "recommendation_id": rec.id,
            "response": response,
            "channel": "ntfy",
        }
    assert (accept["label"], ignore["label"]) == ("Accept", "Ignore")
    assert view == {"action": "view", "label": "Open", "url": "http://192.168.1.20:8765/"}


@respx.mock
def test_without_a_callback_url_ntfy_gets_no_buttons_and_no_token(demo, memory_keyring):
    settings, store = demo
    settings = configured(settings, ntfy_server=NTFY, ntfy_topic="t")
    access = ensure_access_token(settings)
    route = respx.post(f"{NTFY}/").mock(return_value=httpx.Response(200))
    notify_recommendation(store, settings, the_rec(store), DEMO_NOW)
    request = route.calls.last.request
    assert "actions" not in json.loads(request.content)
    assert "authorization" not in request.headers
    assert access not in request.content.decode()


@respx.mock
def test_the_webhook_gets_the_recommendation_and_never_the_token(demo, memory_keyring):
    settings, store = demo
    settings = configured(settings, webhook_url=HOOK, callback_url="http://pi.lan:8765")
    access = ensure_access_token(settings)
    route = respx.post(HOOK).mock(return_value=httpx.Response(204))
    rec = the_rec(store)
    assert notify_recommendation(store, settings, rec, DEMO_NOW) == {"webhook": "sent"}
    body = json.loads(route.calls.last.request.content)
    assert body["event"] == "recommendation"
    assert body["recommendation"]["id"] == rec.id
    assert body["recommendation"]["action"] == rec.action
    assert body["feedback_url"] == "http://pi.lan:8765/api/feedback"
    assert access not in route.calls.last.request.content.decode()


@respx.mock
def test_one_notification_per_slot_even_across_cycles_and_restarts(demo, memory_keyring):
    settings, store = demo
    settings = configured(settings, ntfy_server=NTFY, ntfy_topic="t", webhook_url=HOOK)
    ntfy = respx.post(f"{NTFY}/").mock(return_value=httpx.Response(200))
    hook = respx.post(HOOK).mock(return_value=httpx.Response(200))
    first = run_cycle(settings, store, now=DEMO_NOW)  # the cycle announces its recommendation
    assert first.notified == {"ntfy": "sent", "webhook": "sent"}
    rec = recommend(store, settings, DEMO_NOW + timedelta(minutes=15))  # the next cycle's
    assert announce(store, settings, rec, DEMO_NOW + timedelta(minutes=15)) == {}
    store.dispose()
    reopened = Store(settings.database_url)  # a restart: only the database remembers
    try:
        assert announce(reopened, settings, the_rec(reopened), DEMO_NOW) == {}
        assert (ntfy.call_count, hook.call_count) == (1, 1)
        # the next slot's recommendation is announced once more
        later = DEMO_NOW.replace(hour=12, minute=10)
        afternoon = recommend(reopened, settings, later)
        assert afternoon.id != rec.id
        assert announce(reopened, settings, afternoon, later) == {"ntfy": "sent", "webhook": "sent"}
        assert (ntfy.call_count, hook.call_count) == (2, 2)
    finally:
        reopened.dispose()


@respx.mock
def test_a_failed_send_is_retried_a_few_times_then_given_up(demo, memory_keyring):
    settings, store = demo
    settings = configured(settings, webhook_url=HOOK)
    route = respx.post(HOOK).mock(
        side_effect=[httpx.ConnectError("down"), httpx.Response(500), httpx.Response(503)]
    )
    rec = the_rec(store)
    results = [notify_recommendation(store, settings, rec, DEMO_NOW) for _ in range(4)]
    assert results == [
        {"webhook": "failed: ConnectError"},
        {"webhook": "failed: HTTP 500"},
        {"webhook": "failed: HTTP 503"},
        {},
    ]
    assert route.call_count == 3
    with store.session() as s:
        row = s.execute(select(Notification)).scalar_one()
    assert (row.status, row.attempts, row.last_error) == ("failed", 3, "HTTP 503")
    assert "hooks.example.org" not in row.last_error


@respx.mock
def test_answered_or_past_recommendations_are_not_announced(demo, memory_keyring):
    from bridge.learning.feedback import record_feedback

    settings, store = demo
    settings = configured(settings, webhook_url=HOOK)
    route = respx.post(HOOK).mock(return_value=httpx.Response(200))
    rec = the_rec(store)
    assert notify_recommendation(store, settings, rec, DEMO_NOW + timedelta(hours=6)) == {}
    record_feedback(store, rec.id, "accept")
    assert notify_recommendation(store, settings, rec, DEMO_NOW) == {}
    assert route.call_count == 0


def test_nothing_is_sent_when_notify_is_not_configured(demo, memory_keyring):
    settings, store = demo
    with respx.mock(assert_all_called=False) as mock:
        assert notify_recommendation(store, settings, the_rec(store), DEMO_NOW) == {}
    assert mock.calls.call_count == 0


def test_a_crashing_notifier_never_stops_the_cycle(demo, memory_keyring, monkeypatch, caplog):
    import bridge.out.notify

    settings, store = demo
    settings = configured(settings, webhook_url=HOOK)

    def boom(*_a, **_k):
        raise RuntimeError("bug")

    monkeypatch.setattr(bridge.out.notify, "notify_recommendation", boom)
    assert announce(store, settings, the_rec(store), DEMO_NOW) == {}
    assert "notifications crashed" in caplog.text


@pytest.mark.parametrize("clear_missing", [True, False])
def test_the_ntfy_token_lives_in_the_keyring(memory_keyring, clear_missing, settings):
    if not clear_missing:
        set_ntfy_token(settings, "abc")
        assert memory_keyring.get_password("rhythm-bridge", "ntfy-token") == "abc"
    set_ntfy_token(settings, None)
    assert memory_keyring.get_password("rhythm-bridge", "ntfy-token") is None


@respx.mock
def test_the_buttons_make_the_access_token_when_there_is_none_yet(demo, memory_keyring):
    settings, store = demo
    settings = configured(settings, ntfy_server=NTFY, ntfy_topic="t", callback_url="http://pi:8765")
    assert memory_keyring.get_password("rhythm-bridge", "web-access-token") is None
    route = respx.post(f"{NTFY}/").mock(return_value=httpx.Response(200))
    notify_recommendation(store, settings, the_rec(store), DEMO_NOW)
    token = memory_keyring.get_password("rhythm-bridge", "web-access-token")
    accept = json.loads(route.calls.last.request.content)["actions"][0]
    assert token and accept["headers"]["Authorization"] == f"Bearer {token}"


# ---- the daily check-in question ------------------------------------------------------

CALLBACK = "http://192.168.1.20:8765"


def asking(settings, **more):
    return configured(
        settings,
        ntfy_server=NTFY,
        ntfy_topic="rb-7f3a",
        callback_url=CALLBACK + "/",
        checkin_at="08:30",
        **more,
    )


@respx.mock
def test_the_checkin_question_is_the_json_ntfy_documents_with_three_http_buttons(
    demo, memory_keyring
):
    from bridge.auth.access import checkin_token
    from bridge.out.notify import notify_checkin

    settings, store = demo
    settings = asking(settings)
    set_ntfy_token(settings, "tk_ntfy")
    route = respx.post(f"{NTFY}/").mock(return_value=httpx.Response(200, json={"id": "q"}))
    assert notify_checkin(store, settings, DEMO_NOW) == {"ntfy": "sent"}  # 08:40 >= 08:30
    request = route.calls.last.request
    assert request.headers["authorization"] == "Bearer tk_ntfy"  # the ntfy server's own
    access = ensure_access_token(settings)
    token = checkin_token(access)
    button = {
        "action": "http",
        "url": f"{CALLBACK}/api/checkin",
        "method": "POST",
        "headers": {"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        "clear": True,
    }
    assert json.loads(request.content) == {
        "topic": "rb-7f3a",
        "title": "How is your energy?",
        "message": "One tap answers. The page asks more (mood, stress, focus, ...).",
        "tags": ["rhythm-bridge"],
        "click": f"{CALLBACK}/#checkin",
        "actions": [  # ntfy shows three at most
            {**button, "label": "Energy low", "body": '{"energy": 2}'},
            {**button, "label": "OK", "body": '{"energy": 3}'},
            {**button, "label": "Energy high", "body": '{"energy": 4}'},
        ],
    }
    # The buttons carry the narrow check-in token, never the page's access token.
    assert access not in request.content.decode() and token != access


@respx.mock
def test_the_checkin_question_goes_once_a_day_across_restarts(demo, memory_keyring):
    from bridge.out.notify import notify_checkin

    settings, store = demo
    settings = asking(settings)
    route = respx.post(f"{NTFY}/").mock(return_value=httpx.Response(200))
    early = DEMO_NOW.replace(hour=8, minute=29)
    assert notify_checkin(store, settings, early) == {}  # not yet
    assert notify_checkin(store, settings, DEMO_NOW) == {"ntfy": "sent"}
    assert notify_checkin(store, settings, DEMO_NOW + timedelta(minutes=1)) == {}
    store.dispose()
    reopened = Store(settings.database_url)  # a restart: only the database remembers
    try:
        assert notify_checkin(reopened, settings, DEMO_NOW + timedelta(minutes=5)) == {}
        assert route.call_count == 1
        # The next day asks again; a daemon down until 2 h past the time skips the day.
        tomorrow = DEMO_NOW + timedelta(days=1)
        assert notify_checkin(reopened, settings, tomorrow) == {"ntfy": "sent"}
        late = DEMO_NOW + timedelta(days=2, hours=2)  # 10:40, more than 2 h after 08:30
        assert notify_checkin(reopened, settings, late) == {}
        assert route.call_count == 2
    finally:
        reopened.dispose()


@respx.mock
def test_a_failed_checkin_question_is_retried_then_given_up(demo, memory_keyring):
    from bridge.out.notify import notify_checkin

    settings, store = demo
    settings = asking(settings)
    route = respx.post(f"{NTFY}/").mock(return_value=httpx.Response(502))
    results = [notify_checkin(store, settings, DEMO_NOW + timedelta(minutes=i)) for i in range(5)]
    assert [r.get("ntfy", "")[:6] for r in results] == ["failed"] * 3 + [""] * 2
    assert route.call_count == 3


def test_no_checkin_question_unless_a_time_is_set(demo, memory_keyring):
    from bridge.daemon.scheduler import build_scheduler
    from bridge.out.notify import notify_checkin

    settings, store = demo
    plain = configured(settings, ntfy_server=NTFY, ntfy_topic="t", callback_url=CALLBACK)
    assert plain.notify.checkin_at == ""  # off by default
    with respx.mock(assert_all_called=False) as router:
        route = router.post(f"{NTFY}/").mock(return_value=httpx.Response(200))
        for minute in range(0, 24 * 60, 10):
            assert notify_checkin(store, plain, DEMO_NOW + timedelta(minutes=minute)) == {}
    assert route.call_count == 0
    assert "checkin" not in {j.id for j in build_scheduler(plain, store).get_jobs()}
    assert "checkin" in {j.id for j in build_scheduler(asking(settings), store).get_jobs()}
    # A time without ntfy asks nothing either (the webhook has no buttons).
    hook_only = configured(settings, webhook_url=HOOK, checkin_at="08:30")
    assert notify_checkin(store, hook_only, DEMO_NOW) == {}


@pytest.mark.parametrize("bad", ["8:30", "24:00", "08:30:00", "morning"])
def test_checkin_at_must_be_a_time(bad):
    from pydantic import ValidationError

    from bridge.config import NotifySettings

    with pytest.raises(ValidationError, match="08:30"):
        NotifySettings(checkin_at=bad)
