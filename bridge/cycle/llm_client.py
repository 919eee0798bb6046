"""The wire for the optional LLM layer: httpx, a timeout, a per-title cache, a daily budget.

Nothing is sent unless an endpoint is configured. In dry-run mode the request that would
be sent is recorded instead, so the person can see exactly what would leave the machine.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import httpx

from mappings.actions import UNCLASSIFIED
from mappings.classifier import Classification, EventInfo
from mappings.classifier_llm import (
    Api,
    LLMReplyError,
    cache_key,
    parse_reply,
    request_body,
    request_path,
)

log = logging.getLogger("rhythm_bridge.classifier.llm")

LLM_MIN_CONFIDENCE = 0.5
# After this many failed calls in a row, stop asking for the rest of the run: a server
# that is down must not cost one timeout per event.
MAX_FAILURES_IN_A_ROW = 3


@dataclass
class WouldSend:
    url: str
    body: dict[str, Any]


@dataclass
class LLMClient:
    """Implements the LLM layer's `ask`; the caller loads and saves `cache` and `calls`."""

    endpoint: str
    model: str
    api: Api
    timeout: float = 30.0
    budget: int = 200
    calls: int = 0  # calls already made today
    cache: dict[str, tuple[str, float]] = field(default_factory=dict)
    dry_run: bool = False
    transport: httpx.BaseTransport | None = None
    new_answers: dict[str, tuple[str, float]] = field(default_factory=dict)
    would_send: list[WouldSend] = field(default_factory=list)
    errors: int = 0
    failures_in_a_row: int = 0
    _client: httpx.Client | None = field(default=None, init=False, repr=False)
    _budget_logged: bool = field(default=False, init=False, repr=False)

    @property
    def url(self) -> str:
        path = request_path(self.api)
        base = self.endpoint.rstrip("/")
        return base if base.endswith(path) else base + path

    def ask(self, event: EventInfo) -> Classification | None:
        key = cache_key(event.title)
        if key in self.cache:
            return self._answer(*self.cache[key], note="cached")
        body = request_body(self.api, self.model, event)
        if self.dry_run or not self.endpoint:
            self.would_send.append(
                WouldSend(self.url if self.endpoint else "(no endpoint set)", body)
            )
            return None
        if self.failures_in_a_row >= MAX_FAILURES_IN_A_ROW:
            return None
        if self.calls >= self.budget:
            if not self._budget_logged:
                log.warning(
                    "LLM daily budget of %d calls used up; asking again tomorrow", self.budget
                )
                self._budget_logged = True
            return None
        self.calls += 1
        try:
            reply = self._http().post(self.url, json=body)
            reply.raise_for_status()
            answer = parse_reply(self.api, reply.json())
        except (httpx.HTTPError, ValueError, LLMReplyError) as err:
            # One failed call leaves the event UNCLASSIFIED; the next cycle asks again.
            self.errors += 1
            self.failures_in_a_row += 1
            log.warning("LLM classifier call failed: %s", _describe(err))
            if self.failures_in_a_row == MAX_FAILURES_IN_A_ROW:
                log.warning(
                    "LLM classifier: %d failures in a row; not asking again this run",
                    MAX_FAILURES_IN_A_ROW,
                )
            return None
        self.failures_in_a_row = 0
        self.cache[key] = self.new_answers[key] = (answer.action, answer.confidence)
        return self._answer(answer.action, answer.confidence)

    @staticmethod
    def _answer(action: str, confidence: float, note: str = "") -> Classification | None:
        if action == UNCLASSIFIED or confidence < LLM_MIN_CONFIDENCE:
            return None
        return Classification(action, round(confidence, 3), "llm", note)

    def _http(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(timeout=self.timeout, transport=self.transport)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _describe(err: Exception) -> str:
    if isinstance(err, httpx.TimeoutException):
        return "timed out"
    if isinstance(err, httpx.HTTPStatusError):
        return f"HTTP {err.response.status_code} from {err.request.url}"
    if isinstance(err, httpx.HTTPError):
        return f"{type(err).__name__}: {err}"
    return str(err) if isinstance(err, LLMReplyError) else f"reply is not JSON: {err}"
