"""The one retry policy for every provider: bounded attempts, jittered exponential backoff.

Network errors and 5xx answers are retried; a 429 is waited out when the provider asks for
a short pause and otherwise becomes `RateLimited(retry_after)`; every other answer goes
back to the caller, which knows what a 401 or a 410 means for its API.
"""

from __future__ import annotations

import logging
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import httpx

from bridge.errors import RateLimited, Transient

log = logging.getLogger("rhythm_bridge.http")

T = TypeVar("T")

# Patched by tests; everything that waits goes through here.
sleep: Callable[[float], None] = time.sleep


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 4
    base: float = 1.0
    cap: float = 60.0
    # A 429 asking for at most this long is waited out inside the pull.
    max_inline_wait: float = 60.0

    @classmethod
    def from_settings(cls, settings: Any) -> RetryPolicy:
        h = settings.http
        return cls(h.max_attempts, h.backoff_base_seconds, h.backoff_max_seconds)

    def delay(self, attempt: int) -> float:
        """Full jitter: uniform in [0, min(cap, base * 2**attempt)]."""
        return random.uniform(0, min(self.cap, self.base * 2**attempt))


class RetryableError(Exception):
    """Raised inside `with_retries` calls to ask for another attempt."""


def with_retries(
    call: Callable[[], T], policy: RetryPolicy, what: str, retry_on: tuple[type[BaseException], ...]
) -> T:
    """Run `call`, retrying the given exceptions; the last one becomes `Transient`."""
    for attempt in range(policy.max_attempts):
        try:
            return call()
        except retry_on as err:
            if attempt + 1 >= policy.max_attempts:
                raise Transient(
                    f"{what}: gave up after {policy.max_attempts} attempts: {err}"
                ) from None
            wait = policy.delay(attempt)
            log.info("%s: %s; retry %d in %.1fs", what, err, attempt + 1, wait)
            sleep(wait)
    raise AssertionError("unreachable")


def retry_after_seconds(headers: httpx.Headers | dict[str, str], now: float | None = None) -> float:
    """Seconds to wait from `Retry-After` (seconds or HTTP date) or `X-RateLimit-Reset`."""
    now = time.time() if now is None else now
    value = headers.get("retry-after") or headers.get("Retry-After")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            try:
                when = parsedate_to_datetime(value)
                return max(0.0, when.timestamp() - now)
            except (TypeError, ValueError):
                pass
    reset = headers.get("x-ratelimit-reset") or headers.get("X-RateLimit-Reset")
    if reset:
        try:
            secs = float(reset)
        except ValueError:
            return 60.0
        # Some APIs send an epoch timestamp instead of a delta.
        return max(0.0, secs - now) if secs > 1e9 else secs
    return 60.0


class RateWindow:
    """At most `limit` requests per sliding `window` seconds (WHOOP: 100 a minute)."""

    def __init__(self, limit: int, window: float = 60.0) -> None:
        self.limit, self.window = limit, window
        self.sent: deque[float] = deque()

    def wait(self) -> None:
        now = time.monotonic()
        while self.sent and now - self.sent[0] >= self.window:
            self.sent.popleft()
        if len(self.sent) >= self.limit:
            sleep(self.window - (now - self.sent[0]))
            self.sent.popleft()
        self.sent.append(time.monotonic())


def request(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    what: str,
    policy: RetryPolicy,
    window: RateWindow | None = None,
    **kwargs: Any,
) -> httpx.Response:
    """Send one request with the shared retry policy; 4xx other than 429 are returned."""
    rate_waits = 0

    def once() -> httpx.Response:
        nonlocal rate_waits
        if window is not None:
            window.wait()
        try:
            resp = client.request(method, url, **kwargs)
        except httpx.TransportError as err:
            raise RetryableError(f"network error: {type(err).__name__}") from None
        if resp.status_code == 429:
            wait = retry_after_seconds(resp.headers)
            if wait <= policy.max_inline_wait and rate_waits < 2:
                rate_waits += 1
                log.info("%s: 429, waiting %.0fs as asked", what, wait)
                sleep(wait)
                return once()
            raise RateLimited(f"{what}: rate limited; retry in {wait:.0f}s", retry_after=wait)
        if resp.status_code >= 500:
            raise RetryableError(f"server error {resp.status_code}")
        return resp

    return with_retries(once, policy, what, (RetryableError,))
