"""After setting up and pulling every live source, no secret appears anywhere on disk or in
logs: not in the database, the snapshot export, status output, or DEBUG-level logs."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from urllib.parse import parse_qs

import httplib2
import httpx
import pytest
import respx
from googleapiclient.http import HttpMockSequence
from typer.testing import CliRunner

from bridge.auth.secrets import Secrets
from bridge.cli.core import state as _state
from bridge.cli.main import app
from bridge.config import load_settings
from tests.connectors.live.fake_browser import FakeBrowser, fake_requests_token_endpoint
from tests.connectors.live.test_garmin import API as GARMIN_API
from tests.connectors.live.test_garmin import TOKEN_URL as GARMIN_TOKEN_URL
from tests.connectors.live.test_garmin import FakeGarmin
from tests.connectors.live.test_google_calendar import PAGE_1, PAGE_2, _page
from tests.connectors.live.whoop_fakes import API as WHOOP_API
from tests.connectors.live.whoop_fakes import TOKEN_URL as WHOOP_TOKEN_URL
from tests.connectors.live.whoop_fakes import FakeWhoop
from tests.helpers import write_config

SECRETS = {
    "whoop-client-secret-value",
    "whoop-auth-code-value",
    "whoop-access-token-value",
    "whoop-refresh-token-value",
    "whoop-rotated-access-value",
    "whoop-rotated-refresh-value",
    "GOCSPX-google-client-secret-value",
    "4/0google-auth-code-value",
    "ya29.google-access-token-value",
    "1//google-refresh-token-value",
    "garmin-personal-api-key-value",
}


def test_no_secret_leaks_into_logs_db_exports_or_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client_secrets = tmp_path / "provider" / "client_secret.json"  # the person's own file
    client_secrets.parent.mkdir()
    client_secrets.write_text(
        json.dumps(
            {
                "installed": {
                    "client_id": "1234-abc.apps.googleusercontent.com",
                    "client_secret": "GOCSPX-google-client-secret-value",
                    "auth_uri": "https://accounts.google.com/o/oauth2/auth",
                    "token_uri": "https://oauth2.googleapis.com/token",
                }
            }
        )
    )
    home = tmp_path / "home"
    config = write_config(
        tmp_path / "config.toml",
        home,
        whoop='[sources.whoop]\nenabled = true\nclient_id = "whoop-client-id"',
        google=f'[sources.google_calendar]\nenabled = true\nclient_secrets_file = "{client_secrets}"',
        garmin="[sources.garmin]\nenabled = true",
    )
    log_file = home / "debug.log"
    home.mkdir()
    handler = logging.FileHandler(log_file)
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    outputs: list[str] = []

    def expire_whoop_token() -> None:
        secrets = Secrets.from_settings(load_settings(config))
        token = secrets.get_json("whoop:token") or {}
        secrets.set_json("whoop:token", {**token, "expires_at": 0})

    def run(*args: str, browser: FakeBrowser | None = None) -> None:
        if browser is not None:
            monkeypatch.setattr("bridge.cli.auth._prompter", browser.prompter)
        _state.clear()
        result = CliRunner().invoke(app, ["--config", str(config), "-v", *args])
        outputs.append(result.output)
        assert result.exit_code in (0, 1), result.output

    try:
        # --- setup of all three sources
        token_answers = iter(
            [
                {
                    "access_token": "whoop-access-token-value",
                    "refresh_token": "whoop-refresh-token-value",
                },
                {
                    "access_token": "whoop-rotated-access-value",
                    "refresh_token": "whoop-rotated-refresh-value",
                },
            ]
        )

        def whoop_token(request: httpx.Request) -> httpx.Response:
            form = parse_qs(request.content.decode())
            if form["grant_type"] == ["refresh_token"] and form["refresh_token"] != [
                "whoop-refresh-token-value"
            ]:
                # a provider that echoes the bad token back in its error must not leak it
                return httpx.Response(
                    400,
                    json={
                        "error": "invalid_grant",
                        "error_description": f"bad {form['refresh_token'][0]}",
                    },
                )
            return httpx.Response(
                200, json={**next(token_answers), "expires_in": 3600, "scope": "offline"}
            )

        with respx.mock(assert_all_called=False) as mock:
            mock.post(WHOOP_TOKEN_URL).mock(side_effect=whoop_token)
            mock.get(f"{WHOOP_API}/v2/user/profile/basic").mock(
                return_value=httpx.Response(200, json={"user_id": 10129})
            )
            run(
                "auth",
                "whoop",
                "--mode",
                "paste",
                browser=FakeBrowser("whoop-auth-code-value", secret="whoop-client-secret-value"),
            )
            fake_requests_token_endpoint(
                monkeypatch,
                lambda form: {
                    "access_token": "ya29.google-access-token-value",
                    "refresh_token": "1//google-refresh-token-value",
                    "expires_in": 3599,
                    "token_type": "Bearer",
                },
            )
            run(
                "auth",
                "google",
                "--mode",
                "paste",
                browser=FakeBrowser("4/0google-auth-code-value"),
            )
            garmin = FakeGarmin()
            mock.post(GARMIN_TOKEN_URL).mock(side_effect=garmin.exchange)
            run("auth", "garmin", browser=FakeBrowser("", secret="garmin-personal-api-key-value"))

            # --- pulls: all good, then WHOOP rotates, then WHOOP refuses
            whoop = FakeWhoop()
            whoop.valid_access = {"whoop-access-token-value", "whoop-rotated-access-value"}
            mock.route(url__startswith=WHOOP_API).mock(side_effect=whoop)
            mock.route(url__startswith=GARMIN_API).mock(side_effect=garmin)
            monkeypatch.setattr(
                httplib2,
                "Http",
                lambda *a, **k: HttpMockSequence(
                    [
                        _page(PAGE_1, next_page="p2"),
                        _page(PAGE_2, sync="sync-1"),
                        ({"status": "401"}, json.dumps({"error": {"code": 401}})),
                    ]
                ),
            )
            run("sync")
            expire_whoop_token()
            run("sync", "whoop")  # refresh: the token rotates
            expire_whoop_token()
            run("sync", "whoop")  # refresh refused, the answer echoes the token back
            run("sync", "--since", "2026-11-01")
            run("status", "--json")
            run("auth", "status", "--json")
            run("export", "--out", str(home / "export.json"))
            run("--help")
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()

    assert any("google_calendar: ok" in o for o in outputs), outputs
    assert any("whoop: ok" in o for o in outputs), outputs
    assert any("garmin: ok" in o for o in outputs), outputs
    assert any("whoop: reauth_required" in o for o in outputs), outputs
    assert log_file.stat().st_size > 0
    secrets = SECRETS | {garmin.token}
    scanned = 0
    for path in sorted(home.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            scanned += 1
            for secret in secrets:
                assert secret.encode() not in data, f"{secret!r} found in {path}"
    assert scanned >= 4  # db, log, export, the encrypted keyring (at least)
    for text in outputs:
        for secret in secrets:
            assert secret not in text, f"{secret!r} in CLI output"
