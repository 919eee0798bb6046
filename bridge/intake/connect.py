"""One-time setup of each live source: OAuth or API key, stored through the keyring.

Every flow works over SSH without a browser on the server: it prints the authorization
URL, the person opens it anywhere, and pastes back the address the browser was sent to
(or just the code). A loopback listener is the alternative on a machine with a browser.
The flows talk to the person only through `Prompter`, so the CLI and the tests drive
them the same way.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from bridge.auth.oauth import (
    Pkce,
    authorization_url,
    code_from_redirect,
    new_state,
    wait_for_redirect,
)
from bridge.auth.secrets import Secrets, quiet_secret_loggers
from bridge.config import Settings
from bridge.errors import AuthExpired, BridgeError, ConfigError
from connectors.registry import WITH_AUTH, auth_choices, auth_command

quiet_secret_loggers()

GOOGLE_TESTING_WARNING = (
    "Note: if your OAuth consent screen is in 'Testing', Google expires the refresh token "
    "after 7 days and you would have to run this again every week. In the Google Cloud "
    "console, set the app's publishing status to 'In production' (an unverified app is "
    "fine for your own account) before you continue."
)


@dataclass
class Prompter:
    say: Callable[[str], None]
    ask: Callable[[str], str]
    ask_secret: Callable[[str], str]


def source_name(name: str) -> str:
    """`google`, `google_calendar`, `whoop` or `garmin` -> the config section name."""
    for section, spec in WITH_AUTH.items():
        if spec.auth and name in (section, spec.auth.command):
            return section
    raise BridgeError(f"unknown source {name!r}; choose one of: {', '.join(auth_choices())}")


def _paste(prompt: Prompter, url: str, state: str, redirect: str) -> str:
    prompt.say(f"\nOpen this address in a browser (on any device) and allow access:\n\n  {url}\n")
    prompt.say(
        f"The browser is then sent to {redirect}... ; that page may fail to load, which is "
        "expected. Copy the whole address from the address bar."
    )
    return code_from_redirect(prompt.ask("Paste the address (or just the code)"), state)


def _is_loopback(redirect: str) -> bool:
    parts = urlsplit(redirect)
    return parts.scheme == "http" and parts.hostname in ("localhost", "127.0.0.1")


def _google_consent(
    flow: Any, prompt: Prompter, loopback: bool, open_browser: bool, port: int
) -> Any:
    """The person's consent, by the loopback listener or by pasting the redirect."""
    if loopback:
        prompt.say(f"Waiting for the browser on http://localhost:{port}/ ...")
        return flow.run_local_server(
            host="localhost",
            port=port,
            open_browser=open_browser,
            authorization_prompt_message="Open this address in a browser: {url}",
            timeout_seconds=300,
            access_type="offline",
            prompt="consent",
        )
    url, state = flow.authorization_url(access_type="offline", prompt="consent")
    code = _paste(prompt, url, state, f"http://localhost:{port}/")
    try:
        flow.fetch_token(code=code)
    except Exception as err:  # oauthlib raises many types; none may carry the code out
        raise BridgeError(
            f"Google refused the code ({type(err).__name__}); run the command again"
        ) from None
    return flow.credentials


def _is_loopback_host(host: str | None) -> bool:
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextmanager
def _token_transport(token_url: str) -> Iterator[None]:
    """Plain http to a token endpoint on this machine (a test server, a local proxy) is
    allowed; anywhere else it is refused here, by name, before the person consents,
    instead of by oauthlib afterwards as "Google refused the code (InsecureTransportError)".
    """
    parts = urlsplit(token_url)
    if parts.scheme == "https":
        yield
        return
    if parts.scheme != "http" or not _is_loopback_host(parts.hostname):
        raise ConfigError(
            f"[sources.google_calendar] token_url {token_url!r}: use https:// (plain http is "
            "allowed only to this machine: localhost, 127.0.0.1 or ::1), or the code and "
            "tokens would cross the network unencrypted"
        )
    old = os.environ.get("OAUTHLIB_INSECURE_TRANSPORT")
    os.environ["OAUTHLIB_INSECURE_TRANSPORT"] = "1"  # oauthlib's own switch, this call only
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("OAUTHLIB_INSECURE_TRANSPORT", None)
        else:
            os.environ["OAUTHLIB_INSECURE_TRANSPORT"] = old


# --- Google -----------------------------------------------------------------------------


def _google_flow(
    settings: Settings, client_secrets_file: str | None, scopes: list[str]
) -> tuple[Any, int]:
    """The installed-app flow on the person's OAuth client, for `scopes`; and its port."""
    from google_auth_oauthlib.flow import InstalledAppFlow

    cfg = settings.sources.google_calendar
    path = Path(client_secrets_file or cfg.client_secrets_file).expanduser()
    if not str(path) or str(path) == "." or not path.is_file():
        raise ConfigError(
            "[sources.google_calendar] client_secrets_file: set it to the OAuth client JSON "
            "downloaded from the Google Cloud console (APIs & Services > Credentials > "
            "OAuth client ID > Desktop app), or pass --client-secrets PATH"
        )
    port = cfg.redirect_port
    try:
        flow = InstalledAppFlow.from_client_secrets_file(
            str(path), scopes=scopes, redirect_uri=f"http://localhost:{port}/"
        )
    except (ValueError, KeyError, OSError) as err:
        raise ConfigError(f"{path}: not an OAuth client secrets file: {err}") from None
    flow.client_config["token_uri"] = cfg.token_url
    return flow, port


def _revoke_at_google(settings: Settings, client: httpx.Client, info: dict[str, Any]) -> str | None:
    """POST the stored token to Google's revoke endpoint; None when none is stored."""
    token = info.get("refresh_token") or info.get("token")
    if not token:
        return None
    # In the form body, never in the URL: URLs end up in logs.
    resp = client.post(settings.sources.google_calendar.revoke_url, data={"token": token})
    return "revoked at Google" if resp.status_code == 200 else f"Google answered {resp.status_code}"


def authorize_google(
    settings: Settings,
    secrets: Secrets,
    prompt: Prompter,
    *,
    loopback: bool = False,
    open_browser: bool = True,
    client_secrets_file: str | None = None,
    tasks: bool = False,
) -> str:
    """InstalledAppFlow with calendar.readonly (and tasks.readonly when `tasks`) and
    offline access; stores the credentials. One token serves both Google sources."""
    from connectors.google_calendar import SCOPES, save_credentials
    from connectors.google_tasks import SCOPE as TASKS_SCOPE

    cfg = settings.sources.google_calendar
    prompt.say(GOOGLE_TESTING_WARNING)
    flow, port = _google_flow(
        settings, client_secrets_file, [*SCOPES, TASKS_SCOPE] if tasks else list(SCOPES)
    )
    if tasks:
        # Google's consent page lets the person untick Tasks; oauthlib would then refuse
        # the whole answer ("scope has changed"). Calendar still works: accept it and say so.
        os.environ.setdefault("OAUTHLIB_RELAX_TOKEN_SCOPE", "1")
    with _token_transport(cfg.token_url):
        creds = _google_consent(flow, prompt, loopback, open_browser, port)
    if not creds.refresh_token:
        raise BridgeError(
            "Google returned no refresh token; remove rhythm-bridge's access at "
            "myaccount.google.com/permissions and run the command again"
        )
    save_credentials(secrets, creds)
    if tasks:
        # What Google granted (the token answer's scope), not what was asked for.
        answer = (flow.oauth2session.token or {}).get("scope") or []
        granted = set(answer.split() if isinstance(answer, str) else answer)
        if granted and TASKS_SCOPE not in granted:
            from connectors.google_calendar import TOKEN_SECRET

            info = secrets.get_json(TOKEN_SECRET) or {}
            secrets.set_json(TOKEN_SECRET, {**info, "scopes": sorted(granted)})
            return (
                "Google Calendar connected (scope calendar.readonly, offline access), but the "
                "Tasks permission was not ticked on Google's consent page; run "
                "`rhythm-bridge auth google --tasks` again and allow it"
            )
        return "Google Calendar and Google Tasks connected (read-only, offline access)"
    return (
        "Google Calendar connected (scope calendar.readonly, offline access). To let the "
        "Progress meter read your Google Tasks too (read-only), run "
        "`rhythm-bridge auth google --tasks`"
    )


def revoke_google(settings: Settings, secrets: Secrets, client: httpx.Client) -> str:
    from connectors.google_calendar import TOKEN_SECRET

    return (
        _revoke_at_google(settings, client, secrets.get_json(TOKEN_SECRET) or {})
        or "no Google token stored"
    )


def authorize_google_write(
    settings: Settings,
    secrets: Secrets,
    prompt: Prompter,
    *,
    loopback: bool = False,
    open_browser: bool = True,
    client_secrets_file: str | None = None,
) -> str:
    """A consent of its own for Google's events scope (the write-back), kept apart from the
    read-only token of the calendar sync, so either can be revoked without the other."""
    from connectors.google_calendar import WRITE_SCOPE, WRITE_TOKEN_SECRET, save_credentials

    cfg = settings.sources.google_calendar
    prompt.say(
        "This lets rhythm-bridge create, change and delete events in your Google calendars "
        f"(scope {WRITE_SCOPE}). It only ever writes the suggestions you accept, into the "
        f"calendar [google_write] calendar names ({settings.google_write.calendar!r})."
    )
    prompt.say(GOOGLE_TESTING_WARNING)
    flow, port = _google_flow(settings, client_secrets_file, [WRITE_SCOPE])
    # Google's consent page lets the person untick the permission; say so instead of
    # oauthlib's "scope has changed".
    os.environ.setdefault("OAUTHLIB_RELAX_TOKEN_SCOPE", "1")
    with _token_transport(cfg.token_url):
        creds = _google_consent(flow, prompt, loopback, open_browser, port)
    answer = (flow.oauth2session.token or {}).get("scope") or []
    granted = set(answer.split() if isinstance(answer, str) else answer)
    if granted and WRITE_SCOPE not in granted:
        raise BridgeError(
            "the permission to edit events was not ticked on Google's consent page; run "
            "`rhythm-bridge auth google-write` again and allow it"
        )
    if not creds.refresh_token:
        raise BridgeError(
            "Google returned no refresh token; remove rhythm-bridge's access at "
            "myaccount.google.com/permissions and run the command again"
        )
    save_credentials(secrets, creds, WRITE_TOKEN_SECRET)
    tail = (
        ""
        if settings.google_write.enabled
        else "; turn it on in the config: [google_write] enabled = true"
    )
    return f"Google Calendar write-back allowed (scope calendar.events, offline access){tail}"


def revoke_google_write(settings: Settings, secrets: Secrets, client: httpx.Client) -> str:
    """Revoke the write consent at Google and forget its token (the sync's token stays)."""
    from connectors.google_calendar import WRITE_TOKEN_SECRET

    at_google = _revoke_at_google(settings, client, secrets.get_json(WRITE_TOKEN_SECRET) or {})
    if at_google is None:
        return "no write consent stored"
    secrets.delete(WRITE_TOKEN_SECRET)
    return f"{at_google}; the write token is deleted"


# --- WHOOP ------------------------------------------------------------------------------


def authorize_whoop(
    settings: Settings,
    secrets: Secrets,
    prompt: Prompter,
    *,
    loopback: bool = False,
    client: httpx.Client | None = None,
) -> str:
    """Authorization code + PKCE with the `offline` scope; stores the rotating token pair."""
    from connectors.whoop import CLIENT_SECRET, SCOPES, WhoopAPI

    cfg = settings.sources.whoop
    if not cfg.client_id:
        raise ConfigError(
            "[sources.whoop] client_id: create an app at developer-dashboard.whoop.com and "
            "put its client id in the config"
        )
    if not secrets.get(CLIENT_SECRET):
        secret = prompt.ask_secret("WHOOP client secret (input hidden)").strip()
        if not secret:
            raise BridgeError("no client secret given")
        secrets.set(CLIENT_SECRET, secret)
    state, pkce = new_state(), Pkce.new()
    url = authorization_url(
        cfg.auth_url,
        response_type="code",
        client_id=cfg.client_id,
        redirect_uri=cfg.redirect_uri,
        scope=" ".join(SCOPES),
        state=state,
        code_challenge=pkce.challenge,
        code_challenge_method=pkce.method,
    )
    if loopback and _is_loopback(cfg.redirect_uri):
        parts = urlsplit(cfg.redirect_uri)
        prompt.say(f"Open this address in a browser:\n\n  {url}\n")
        pasted = wait_for_redirect(parts.hostname or "localhost", parts.port or 80)
        code = code_from_redirect(pasted, state)
    else:
        if loopback:
            prompt.say(
                "WHOOP needs an https redirect, which no local listener can answer: paste it."
            )
        code = _paste(prompt, url, state, cfg.redirect_uri)
    api = WhoopAPI(settings, secrets, client)
    try:
        api.tokens.exchange_code(code, pkce.verifier)
        profile = api.get("/v2/user/profile/basic")
    except AuthExpired as err:
        # Most often a mistyped client secret: forget it so the next attempt asks again.
        secrets.delete(CLIENT_SECRET)
        raise BridgeError(
            f"WHOOP refused the authorization ({err.args[0].rsplit('(', 1)[-1].rstrip(')')}); "
            "check the client id and secret and run `rhythm-bridge auth whoop` again"
        ) from None
    finally:
        if client is None:
            api.client.close()
    user = str(profile.get("user_id", "?"))
    previous = secrets.get("whoop:user_id")
    secrets.set("whoop:user_id", user)
    note = ""
    if previous and previous != user:
        note = f" (a different account than before: {previous}; its data stays in the store)"
    return f"WHOOP connected as user {user}{note}"


def revoke_whoop(settings: Settings, secrets: Secrets, client: httpx.Client) -> str:
    from connectors.whoop import TOKEN_SECRET, WhoopAPI

    if not secrets.get_json(TOKEN_SECRET):
        return "no WHOOP token stored"
    status = WhoopAPI(settings, secrets, client).delete("/v2/user/access")
    return "revoked at WHOOP" if status in (200, 204) else f"WHOOP answered {status}"


# --- Garmin -----------------------------------------------------------------------------


def authorize_garmin(
    settings: Settings, secrets: Secrets, prompt: Prompter, *, client: httpx.Client | None = None
) -> str:
    """Store a Personal API key after checking Garmin accepts it (one token exchange)."""
    from connectors.garmin import GarminAPI

    prompt.say(
        "Create a Personal API key in Garmin Connect web: Settings > Personal API Token "
        "(https://connect.garmin.com/app/settings/personalApiToken). It is shown once."
    )
    key = prompt.ask_secret("Garmin Personal API key (input hidden)").strip()
    if not key:
        raise BridgeError("no API key given")
    api = GarminAPI(settings, secrets, client)
    try:
        token = api.tokens.exchange(key)
    finally:
        if client is None:
            api.client.close()
    until = datetime.fromtimestamp(token["expires_at"], UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"Garmin Personal API connected (bearer token valid until {until})"


# --- status and revoke ------------------------------------------------------------------

# section -> (the long-lived credential, the cached token with its expiry)
CREDENTIALS = {
    name: (spec.auth.credential, spec.auth.token) for name, spec in WITH_AUTH.items() if spec.auth
}
SECRET_NAMES = {name: spec.auth.secrets for name, spec in WITH_AUTH.items() if spec.auth}


def auth_status(settings: Settings, secrets: Secrets, store: Any) -> dict[str, Any]:
    """Per source: configured, whether a credential is stored, expiry, sync status. No values."""
    from bridge.intake.sources import get_state

    rows = []
    for section in CREDENTIALS:
        cfg = getattr(settings.sources, section)
        credential, token_name = CREDENTIALS[section]
        doc = secrets.get_json(token_name) or {}
        expires = doc.get("expiry")
        if doc.get("expires_at"):
            expires = datetime.fromtimestamp(float(doc["expires_at"]), UTC).isoformat()
        state = get_state(store, section)
        stored = secrets.get(credential) is not None
        if section == "google_tasks":
            from connectors.google_tasks import has_tasks_scope

            # The Google token is shared: Tasks needs it to carry the tasks scope.
            stored = stored and has_tasks_scope(doc)
        rows.append(
            {
                "source": section,
                "command": auth_command(section),
                "enabled": cfg.enabled,
                "credentials_stored": stored,
                "access_token_expires": expires,
                "sync_status": state.status if state else "never",
            }
        )
    from connectors.google_calendar import WRITE_TOKEN_SECRET

    write = {
        "enabled": settings.google_write.enabled,
        "calendar": settings.google_write.calendar,
        "consent_stored": bool((secrets.get_json(WRITE_TOKEN_SECRET) or {}).get("refresh_token")),
        "command": "rhythm-bridge auth google-write",
    }
    return {"keyring": secrets.description, "sources": rows, "google_write": write}


def revoke_garmin(settings: Settings, secrets: Secrets, client: httpx.Client) -> str:
    return "Garmin has no revoke endpoint; delete the key in Garmin Connect web"


# section -> how the provider is told to forget the access (every source with `auth` in
# connectors.registry has one; tests/connectors/test_registry.py checks it).
REVOKERS: dict[str, Callable[[Settings, Secrets, httpx.Client], str]] = {
    "google_calendar": revoke_google,
    "google_tasks": revoke_google,  # one token for both
    "whoop": revoke_whoop,
    "garmin": revoke_garmin,
}


def revoke(settings: Settings, secrets: Secrets, section: str, client: httpx.Client) -> str:
    """Revoke at the provider where it has an endpoint, then forget the local secrets."""
    try:
        remote = REVOKERS[section](settings, secrets, client)
    except (BridgeError, httpx.HTTPError) as err:
        remote = f"could not revoke at the provider ({type(err).__name__}); forgot it locally"
    removed = sum(secrets.delete(name) for name in SECRET_NAMES[section])
    return f"{remote}; removed {removed} stored secret(s)"
