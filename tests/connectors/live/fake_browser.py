"""A fake browser for the OAuth CLI flows: reads the printed URL, 'consents', pastes back."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests

from bridge.intake.connect import Prompter


class FakeBrowser:
    """Prompter whose `ask` plays the person: open the last URL shown, paste the redirect."""

    def __init__(self, code: str, secret: str = "", tamper_state: bool = False) -> None:
        self.code, self.secret, self.tamper_state = code, secret, tamper_state
        self.said: list[str] = []
        self.opened: dict[str, list[str]] = {}

    def say(self, text: str) -> None:
        self.said.append(text)

    def ask(self, text: str) -> str:
        urls = re.findall(r"https?://\S+\?\S+", "\n".join(self.said))
        url = urls[-1]
        self.opened = parse_qs(urlsplit(url).query)
        state = self.opened["state"][0]
        if self.tamper_state:
            state = "someone-elses-state"
        redirect = self.opened["redirect_uri"][0]
        return f"{redirect}?{urlencode({'code': self.code, 'state': state})}"

    def ask_secret(self, text: str) -> str:
        return self.secret

    def prompter(self) -> Prompter:
        return Prompter(self.say, self.ask, self.ask_secret)


def fake_requests_token_endpoint(
    monkeypatch: pytest.MonkeyPatch, answer: Callable[[dict[str, list[str]]], dict[str, Any]]
) -> list[dict[str, list[str]]]:
    """Intercept requests' transport (google-auth-oauthlib's token exchange uses requests)."""
    posted: list[dict[str, list[str]]] = []

    def send(self: Any, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        body = request.body.decode() if isinstance(request.body, bytes) else request.body or ""
        form = parse_qs(body)
        posted.append(form)
        resp = requests.Response()
        resp.status_code = 200
        resp._content = json.dumps(answer(form)).encode()
        resp.headers["Content-Type"] = "application/json"
        resp.url = request.url or ""
        resp.request = request
        return resp

    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", send)
    return posted
