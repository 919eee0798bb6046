"""`rhythm-bridge auth ...` end to end, with a fake browser step (the pasted redirect URL)."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from typer.testing import CliRunner

from bridge.auth.oauth import Pkce, code_from_redirect, wait_for_redirect
from bridge.auth.secrets import Secrets
from bridge.cli.core import state as _state
from bridge.cli.main import app
from bridge.config import load_settings
from bridge.intake.sources import get_state
from bridge.store import Store
from connectors.google_calendar import TOKEN_SECRET as GOOGLE_TOKEN
from connectors.whoop import TOKEN_SECRET as WHOOP_TOKEN
from tests.connectors.live.fake_browser import FakeBrowser, fake_requests_token_endpoint
from tests.helpers import write_config

WHOOP_AUTH = "https://api.prod.whoop.com/oauth/oauth2/auth"
WHOOP_TOKEN_URL = "https://api.prod.whoop.com/oauth/oauth2/token"
WHOOP_API = "https://api.prod.whoop.com/developer"
GARMIN_TOKEN_URL = (
    "https://personal.connectapi.garmin.com"
    "/personalapitoken-service/personal-api/personal-api-key/token"
)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    secrets_file = tmp_path / "client_secret.json"
    secrets_file.write_text(
        json.dumps(
            {
                "installed": {
                    "client_id": "1234-abc.apps.googleusercontent.com",
                    "client_secret": "GOCSPX-google-client-secret-value",
                    "auth_uri": "https://accounts.google.com/o/oauth2/auth",
                    "token_uri": "https://oauth2.googleapis.com/token",
                    "redirect_uris": ["http://localhost"],
                }
            }
        )
    )
    return write_config(
        tmp_path / "config.toml",
        tmp_path / "data",
        whoop='[sources.whoop]\nenabled = true\nclient_id = "whoop-client-id"',
        google=f'[sources.google_calendar]\nclient_secrets_file = "{secrets_file}"',
    )


def _run(config: Path, *args: str, browser: FakeBrowser | None = None, monkeypatch=None):
    if browser is not None:
        monkeypatch.setattr("bridge.cli.auth._prompter", browser.prompter)
    return CliRunner().invoke(app, ["--config", str(config), *args])


def _secrets(config: Path) -> Secrets:
    return Secrets.from_settings(load_settings(config))


def _whoop_token_answer(request: httpx.Request) -> httpx.Response:
    form = dict(x.split("=", 1) for x in request.content.decode().split("&"))
    assert form["grant_type"] == "authorization_code"
    assert form["code"] == "whoop-auth-code-value"
    assert form["client_secret"] == "whoop-client-secret-value"
    assert len(form["code_verifier"]) >= 43
    return httpx.Response(
        200,
        json={
            "access_token": "whoop-access-token-value",
            "refresh_token": "whoop-refresh-token-value",
            "expires_in": 3600,
            "scope": "offline read:sleep",
            "token_type": "bearer",
        },
    )


def test_auth_whoop_paste_flow(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    browser = FakeBrowser("whoop-auth-code-value", secret="whoop-client-secret-value")
    with respx.mock(assert_all_called=True) as mock:
        mock.post(WHOOP_TOKEN_URL).mock(side_effect=_whoop_token_answer)
        mock.get(f"{WHOOP_API}/v2/user/profile/basic").mock(
            return_value=httpx.Response(200, json={"user_id": 10129, "email": "a@b.c"})
        )
        result = _run(
            config, "auth", "whoop", "--mode", "paste", browser=browser, monkeypatch=monkeypatch
        )
    assert result.exit_code == 0, result.output
    assert "WHOOP connected as user 10129" in result.output
    opened = browser.opened
    assert opened["client_id"] == ["whoop-client-id"]
    assert opened["redirect_uri"] == ["https://localhost:8080/callback"]
    assert "offline" in opened["scope"][0].split()
    assert len(opened["state"][0]) >= 8 and opened["code_challenge_method"] == ["S256"]
    stored = _secrets(config).get_json(WHOOP_TOKEN) or {}
    assert stored["refresh_token"] == "whoop-refresh-token-value"
    assert "whoop-client-secret-value" not in result.output


def test_auth_whoop_rejects_a_redirect_from_another_attempt(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    browser = FakeBrowser("c", secret="s", tamper_state=True)
    result = _run(
        config, "auth", "whoop", "--mode", "paste", browser=browser, monkeypatch=monkeypatch
    )
    assert result.exit_code == 2
    assert "different `state`" in result.output
    assert _secrets(config).get_json(WHOOP_TOKEN) is None


def test_auth_google_paste_flow_and_reauth_clears_the_status(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A source stuck in reauth_required is pulled again after a successful auth.
    store = Store(load_settings(config).database_url)
    from datetime import UTC, datetime

    from bridge.intake.sources import SyncOutcome, record_outcome

    record_outcome(
        store, SyncOutcome("google_calendar", "reauth_required", error="x"), datetime.now(UTC)
    )
    store.dispose()
    posted = fake_requests_token_endpoint(
        monkeypatch,
        lambda form: {
            "access_token": "ya29.google-access-token-value",
            "refresh_token": "1//google-refresh-token-value",
            "expires_in": 3599,
            "scope": "https://www.googleapis.com/auth/calendar.readonly",
            "token_type": "Bearer",
        },
    )
    browser = FakeBrowser("4/0google-auth-code-value")
    result = _run(
        config, "auth", "google", "--mode", "paste", browser=browser, monkeypatch=monkeypatch
    )
    assert result.exit_code == 0, result.output
    assert any("7 days" in line and "In production" in line for line in browser.said)
    assert browser.opened["access_type"] == ["offline"] and browser.opened["prompt"] == ["consent"]
    assert browser.opened["scope"] == ["https://www.googleapis.com/auth/calendar.readonly"]
    assert browser.opened["code_challenge_method"] == ["S256"]
    assert posted[0]["code"] == ["4/0google-auth-code-value"]
    assert "code_verifier" in posted[0]
    stored = _secrets(config).get_json(GOOGLE_TOKEN) or {}
    assert stored["refresh_token"] == "1//google-refresh-token-value"
    store = Store(load_settings(config).database_url)
    state = get_state(store, "google_calendar")
    store.dispose()
    assert state is not None and state.status == "authorized" and state.last_attempt_at is None
    assert "rhythm-bridge sync google_calendar" in result.output


def test_auth_google_without_client_secrets_says_where_to_get_them(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "c.toml", tmp_path / "data")
    result = CliRunner().invoke(app, ["--config", str(cfg), "auth", "google", "--mode", "paste"])
    assert result.exit_code == 2
    assert "client_secrets_file" in result.output and "Desktop app" in result.output


def test_auth_garmin_key_status_and_revoke(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    browser = FakeBrowser("", secret="garmin-personal-api-key-value")
    with respx.mock(assert_all_called=True) as mock:
        route = mock.post(GARMIN_TOKEN_URL).mock(
            return_value=httpx.Response(
                200, text="eyJhbGciOiJub25lIn0.eyJleHAiOjQxMDI0NDQ4MDB9.sig"
            )
        )
        result = _run(config, "auth", "garmin", browser=browser, monkeypatch=monkeypatch)
    assert result.exit_code == 0, result.output
    assert route.calls[0].request.headers["authorization"] == "ApiKey garmin-personal-api-key-value"
    assert "valid until 2100-01-01" in result.output
    _state.clear()
    status = _run(config, "auth", "status", "--json")
    doc = json.loads(status.output)
    rows = {r["source"]: r for r in doc["sources"]}
    assert rows["garmin"]["credentials_stored"] and not rows["whoop"]["credentials_stored"]
    assert rows["whoop"]["command"] == "rhythm-bridge auth whoop"
    assert "encrypted file" in doc["keyring"]
    assert "garmin-personal-api-key-value" not in status.output
    _state.clear()
    revoked = _run(config, "auth", "revoke", "garmin", "--yes")
    assert revoked.exit_code == 0, revoked.output
    assert "removed 2 stored secret(s)" in revoked.output
    assert _secrets(config).get("garmin:api_key") is None
    store = Store(load_settings(config).database_url)
    state = get_state(store, "garmin")
    store.dispose()
    assert state is not None and state.status == "reauth_required"


def test_revoke_whoop_calls_the_revoke_endpoint(config: Path) -> None:
    secrets = _secrets(config)
    secrets.set("whoop:client_secret", "whoop-client-secret-value")
    secrets.set_json(
        WHOOP_TOKEN,
        {"access_token": "a", "refresh_token": "r", "expires_at": 4102444800.0, "scope": ""},
    )
    with respx.mock(assert_all_called=True) as mock:
        route = mock.delete(f"{WHOOP_API}/v2/user/access").mock(return_value=httpx.Response(204))
        result = _run(config, "auth", "revoke", "whoop", "--yes")
    assert result.exit_code == 0, result.output
    assert "revoked at WHOOP" in result.output
    assert route.calls[0].request.headers["authorization"] == "Bearer a"
    assert _secrets(config).get_json(WHOOP_TOKEN) is None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_loopback_listener_returns_the_redirect() -> None:
    port = _free_port()
    got: dict[str, Any] = {}

    def serve() -> None:
        got["url"] = wait_for_redirect("127.0.0.1", port, timeout=10)

    thread = threading.Thread(target=serve)
    thread.start()
    for _ in range(100):
        try:
            resp = httpx.get(f"http://127.0.0.1:{port}/?code=abc&state=s-123456789")
            break
        except httpx.ConnectError:
            threading.Event().wait(0.02)
    thread.join(timeout=10)
    assert resp.status_code == 200 and "received" in resp.text
    assert code_from_redirect(got["url"], "s-123456789") == "abc"


def test_pkce_challenge_is_s256_of_the_verifier() -> None:
    import base64
    import hashlib

    p = Pkce.new()
    assert 43 <= len(p.verifier) <= 128
    digest = base64.urlsafe_b64encode(hashlib.sha256(p.verifier.encode()).digest()).rstrip(b"=")
    assert p.challenge == digest.decode()


def test_sync_backfill_with_progress_and_status_names_the_fix(config: Path) -> None:
    from tests.connectors.live.whoop_fakes import FakeWhoop, store_token

    store_token(_secrets(config))
    with respx.mock(assert_all_called=False) as mock:
        mock.route(url__startswith=WHOOP_API).mock(side_effect=FakeWhoop())
        result = _run(config, "sync", "whoop", "--since", "2022-04-01")
    assert result.exit_code == 0, result.output
    assert "whoop: ok" in result.output
    _state.clear()
    bad = _run(config, "sync", "whoop", "--since", "2022-13-01")
    assert bad.exit_code == 2 and "use YYYY-MM-DD" in bad.output
    _state.clear()
    with respx.mock(assert_all_called=False) as mock:
        mock.route(url__startswith=WHOOP_API).mock(return_value=httpx.Response(401))
        mock.post(WHOOP_TOKEN_URL).mock(
            return_value=httpx.Response(400, json={"error": "invalid_grant"})
        )
        failed = _run(config, "sync", "whoop")
    assert failed.exit_code == 1 and "reauth_required" in failed.output
    _state.clear()
    doc = json.loads(_run(config, "status", "--json").output)
    whoop = next(s for s in doc["sources"] if s["source"] == "whoop")
    assert whoop["status"] == "reauth_required"
    assert whoop["action_needed"] == "rhythm-bridge auth whoop"
    assert {s["source"] for s in doc["sources"]} >= {"google_calendar", "whoop", "garmin"}


def test_auth_whoop_with_a_wrong_secret_asks_again_next_time(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    browser = FakeBrowser("whoop-auth-code-value", secret="mistyped")
    with respx.mock(assert_all_called=True) as mock:
        mock.post(WHOOP_TOKEN_URL).mock(
            return_value=httpx.Response(401, json={"error": "invalid_client"})
        )
        result = _run(
            config, "auth", "whoop", "--mode", "paste", browser=browser, monkeypatch=monkeypatch
        )
    assert result.exit_code == 2
    assert (
        "WHOOP refused the authorization (token endpoint said 401 invalid_client)" in result.output
    )
    assert _secrets(config).get("whoop:client_secret") is None


def test_auth_google_loopback_listener(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from google_auth_oauthlib.flow import InstalledAppFlow

    from bridge.intake.connect import authorize_google

    port = _free_port()
    monkeypatch.setenv("RHYTHM_BRIDGE_SOURCES__GOOGLE_CALENDAR__REDIRECT_PORT", str(port))
    settings = load_settings(config)
    fake_requests_token_endpoint(
        monkeypatch,
        lambda form: {
            "access_token": "ya29.loopback-access",
            "refresh_token": "1//loopback-refresh",
            "expires_in": 3599,
            "token_type": "Bearer",
        },
    )
    states: list[str] = []
    real = InstalledAppFlow.authorization_url

    def spy(self: Any, **kwargs: Any) -> Any:
        url, state = real(self, **kwargs)
        states.append(state)
        return url, state

    monkeypatch.setattr(InstalledAppFlow, "authorization_url", spy)

    def browser() -> None:  # what the person's browser does after consenting
        for _ in range(200):
            if states:
                try:
                    httpx.get(f"http://localhost:{port}/?state={states[0]}&code=4/0loopback-code")
                    return
                except httpx.ConnectError:
                    pass
            threading.Event().wait(0.02)

    thread = threading.Thread(target=browser)
    thread.start()
    said: list[str] = []
    from bridge.intake.connect import Prompter

    message = authorize_google(
        settings,
        _secrets(config),
        Prompter(said.append, lambda t: "", lambda t: ""),
        loopback=True,
        open_browser=False,
    )
    thread.join(timeout=10)
    assert "Google Calendar connected" in message
    assert (_secrets(config).get_json(GOOGLE_TOKEN) or {})["refresh_token"] == "1//loopback-refresh"


def _with_token_url(config: Path, token_url: str) -> Path:
    text = config.read_text().replace(
        "[sources.google_calendar]\n", f'[sources.google_calendar]\ntoken_url = "{token_url}"\n'
    )
    config.write_text(text)
    return config


GOOGLE_ANSWER = {
    "access_token": "ya29.google-access-token-value",
    "refresh_token": "1//google-refresh-token-value",
    "expires_in": 3599,
    "scope": "https://www.googleapis.com/auth/calendar.readonly",
    "token_type": "Bearer",
}


def test_auth_google_accepts_a_plain_http_token_url_on_this_machine(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A local test server or proxy: oauthlib would refuse http; on loopback it is allowed.
    _with_token_url(config, "http://127.0.0.1:56741/token")
    monkeypatch.delenv("OAUTHLIB_INSECURE_TRANSPORT", raising=False)
    posted = fake_requests_token_endpoint(monkeypatch, lambda form: GOOGLE_ANSWER)
    browser = FakeBrowser("4/0google-auth-code-value")
    result = _run(
        config, "auth", "google", "--mode", "paste", browser=browser, monkeypatch=monkeypatch
    )
    assert result.exit_code == 0, result.output
    assert posted and posted[0]["code"] == ["4/0google-auth-code-value"]
    import os

    assert "OAUTHLIB_INSECURE_TRANSPORT" not in os.environ  # switched on for that call only


def test_auth_google_names_an_http_token_url_elsewhere_instead_of_blaming_google(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _with_token_url(config, "http://proxy.example.net/token")
    posted = fake_requests_token_endpoint(monkeypatch, lambda form: GOOGLE_ANSWER)
    browser = FakeBrowser("4/0google-auth-code-value")
    result = _run(
        config, "auth", "google", "--mode", "paste", browser=browser, monkeypatch=monkeypatch
    )
    assert result.exit_code == 2
    assert "token_url" in result.output and "https://" in result.output
    assert "Google refused" not in result.output
    assert posted == [] and browser.opened == {}  # refused before anyone consented
    assert _secrets(config).get_json(GOOGLE_TOKEN) is None


def test_auth_google_tasks_asks_for_both_scopes_and_status_shows_tasks(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks_scope = "https://www.googleapis.com/auth/tasks.readonly"
    calendar_scope = "https://www.googleapis.com/auth/calendar.readonly"
    granted = [calendar_scope]
    fake_requests_token_endpoint(
        monkeypatch,
        lambda form: {
            "access_token": "ya29.google-access-token-value",
            "refresh_token": "1//google-refresh-token-value",
            "expires_in": 3599,
            "scope": " ".join(granted),
            "token_type": "Bearer",
        },
    )
    # Without --tasks (and Tasks not enabled): Calendar only, and how to add Tasks.
    browser = FakeBrowser("4/0google-auth-code-value")
    plain = _run(
        config, "auth", "google", "--mode", "paste", browser=browser, monkeypatch=monkeypatch
    )
    assert plain.exit_code == 0, plain.output
    assert browser.opened["scope"] == [calendar_scope]
    assert "rhythm-bridge auth google --tasks" in plain.output
    status = _run(config, "auth", "status", "--json")
    rows = {r["source"]: r for r in json.loads(status.output)["sources"]}
    assert rows["google_calendar"]["credentials_stored"]
    assert not rows["google_tasks"]["credentials_stored"]
    assert "run `rhythm-bridge auth google --tasks`" in _run(config, "auth", "status").output
    _state.clear()
    granted.append(tasks_scope)
    browser = FakeBrowser("4/0google-auth-code-value")
    both = _run(
        config,
        "auth",
        "google",
        "--mode",
        "paste",
        "--tasks",
        browser=browser,
        monkeypatch=monkeypatch,
    )
    assert both.exit_code == 0, both.output
    assert browser.opened["scope"] == [f"{calendar_scope} {tasks_scope}"]
    assert "Google Calendar and Google Tasks connected" in both.output
    assert "[sources.google_tasks] enabled = true" in both.output
    _state.clear()
    status = _run(config, "auth", "status", "--json")
    rows = {r["source"]: r for r in json.loads(status.output)["sources"]}
    assert rows["google_tasks"]["credentials_stored"]


def test_auth_google_tasks_unticked_on_the_consent_page_keeps_calendar(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OAUTHLIB_RELAX_TOKEN_SCOPE", raising=False)
    fake_requests_token_endpoint(
        monkeypatch,
        lambda form: {
            "access_token": "ya29.google-access-token-value",
            "refresh_token": "1//google-refresh-token-value",
            "expires_in": 3599,
            "scope": "https://www.googleapis.com/auth/calendar.readonly",
            "token_type": "Bearer",
        },
    )
    browser = FakeBrowser("4/0google-auth-code-value")
    result = _run(
        config,
        "auth",
        "google",
        "--mode",
        "paste",
        "--tasks",
        browser=browser,
        monkeypatch=monkeypatch,
    )
    assert result.exit_code == 0, result.output
    assert "Tasks permission was not ticked" in result.output
    stored = _secrets(config).get_json(GOOGLE_TOKEN) or {}
    assert stored["refresh_token"] and stored["scopes"] == [
        "https://www.googleapis.com/auth/calendar.readonly"
    ]  # so Tasks says "run auth google --tasks" instead of failing with 403


# ---- the write-back's own consent ------------------------------------------------------

EVENTS_SCOPE = "https://www.googleapis.com/auth/calendar.events"


def test_auth_google_write_asks_only_for_the_events_scope_and_keeps_its_own_token(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from connectors.google_calendar import WRITE_TOKEN_SECRET

    secrets = _secrets(config)
    read_token = {"refresh_token": "1//read-only-refresh", "token": "ya29.read"}
    secrets.set_json(GOOGLE_TOKEN, read_token)
    fake_requests_token_endpoint(
        monkeypatch,
        lambda form: {
            "access_token": "ya29.google-write-access",
            "refresh_token": "1//google-write-refresh",
            "expires_in": 3599,
            "scope": EVENTS_SCOPE,
            "token_type": "Bearer",
        },
    )
    browser = FakeBrowser("4/0google-write-code")
    result = _run(
        config, "auth", "google-write", "--mode", "paste", browser=browser, monkeypatch=monkeypatch
    )
    assert result.exit_code == 0, result.output
    assert browser.opened["scope"] == [EVENTS_SCOPE]  # nothing but the events scope
    assert browser.opened["access_type"] == ["offline"]
    assert "[google_write] enabled = true" in result.output
    assert any("only ever writes the suggestions you accept" in line for line in browser.said)
    stored = _secrets(config).get_json(WRITE_TOKEN_SECRET) or {}
    assert stored["refresh_token"] == "1//google-write-refresh"
    assert _secrets(config).get_json(GOOGLE_TOKEN) == read_token  # the sync's token untouched
    assert "1//google-write-refresh" not in result.output
    _state.clear()
    status = json.loads(_run(config, "auth", "status", "--json").output)["google_write"]
    assert status["consent_stored"] and not status["enabled"]
    assert "google_write    consent stored" in _run(config, "auth", "status").output
    _state.clear()

    with respx.mock(assert_all_called=True) as mock:
        route = mock.post("https://oauth2.googleapis.com/revoke").mock(
            return_value=httpx.Response(200)
        )
        revoked = _run(config, "auth", "google-write", "--revoke")
    assert revoked.exit_code == 0, revoked.output
    assert "revoked at Google" in revoked.output
    assert b"1%2F%2Fgoogle-write-refresh" in route.calls.last.request.content
    assert _secrets(config).get_json(WRITE_TOKEN_SECRET) is None
    assert _secrets(config).get_json(GOOGLE_TOKEN) == read_token


def test_auth_google_write_unticked_on_the_consent_page_stores_nothing(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from connectors.google_calendar import WRITE_TOKEN_SECRET

    fake_requests_token_endpoint(
        monkeypatch,
        lambda form: {
            "access_token": "ya29.google-access",
            "refresh_token": "1//google-refresh",
            "expires_in": 3599,
            "scope": "openid",
            "token_type": "Bearer",
        },
    )
    browser = FakeBrowser("4/0google-write-code")
    result = _run(
        config, "auth", "google-write", "--mode", "paste", browser=browser, monkeypatch=monkeypatch
    )
    assert result.exit_code == 2, result.output
    assert "not ticked" in result.output and "rhythm-bridge auth google-write" in result.output
    assert _secrets(config).get_json(WRITE_TOKEN_SECRET) is None
