"""The one retry policy for every provider: bounded attempts, jittered exponential backoff.

Network errors and 5xx answers are retried; a 429 is waited out when the provider asks for
a short pause and otherwise becomes `RateLimited(retry_after)`; every other answer goes
back to the caller, which knows what a 401 or a 410 means for its API.

Every body is read here with a size cap and a bounded inflate, and every JSON body parsed
here, so a truncated, mis-encoded, absurdly nested or decompression-bomb answer becomes
one clear `SourceError` instead of an exception that no caller expects.
"""

from __future__ import annotations

import json
import logging
import random
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from functools import cache
from typing import Any, TypeVar

import httpx

from bridge.errors import RateLimited, SourceError, Transient

log = logging.getLogger("rhythm_bridge.http")

T = TypeVar("T")

# Patched by tests; everything that waits goes through here.
sleep: Callable[[float], None] = time.sleep

# The largest body (after decompression) any provider's page may have: a WHOOP page is
# tens of KB, a Google page of 2500 events a few MB. Beyond this it is not an answer.
MAX_RESPONSE_BYTES = 32 << 20
_INFLATE_STEP = 1 << 20
# Bodies are inflated here, within the cap, so only what this module can decode is asked for.
ACCEPT_ENCODING = "gzip, deflate"
_HOP_HEADERS = ("content-encoding", "content-length", "transfer-encoding")
RETRY_NEXT_SYNC = "nothing was stored; the next sync tries again"


@cache
def _tls() -> Any:
    # httpx builds a fresh TLS context (and reads the CA bundle) for every Client: about
    # 10 ms of CPU, which a worker pulling thousands of accounts paid once per sync.
    return httpx.create_ssl_context()


def new_client(timeout: float, **kwargs: Any) -> httpx.Client:
    """An httpx client with the process's one TLS context (same trust as httpx's default)."""
    return httpx.Client(timeout=timeout, verify=_tls(), **kwargs)


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


# Set by `rhythm-bridge worker` (bridge/daemon/workers.py): takes one request from the
# provider's budget shared by every worker, waiting for it or raising RateLimited. The
# one-person default leaves it None: its RateWindow paces the one process alone.
budget: Callable[[str], None] | None = None


def spend(provider: str) -> None:
    """Count one request against `provider`'s shared budget (every request of a provider
    comes through here: `request` below and Google's client)."""
    if budget is not None:
        budget(provider)


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


def read_body(resp: httpx.Response, what: str, limit: int = MAX_RESPONSE_BYTES) -> bytes:
    """A streamed response's body, inflated in bounded steps; SourceError beyond `limit`."""
    encoding = resp.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", "", "gzip", "x-gzip", "deflate"):
        raise SourceError(
            f"{what}: answered in an unsupported encoding {encoding!r}; {RETRY_NEXT_SYNC}"
        )
    # wbits 47 reads a gzip or a zlib header, which is what "deflate" means in practice.
    inflater = None if encoding in ("identity", "") else zlib.decompressobj(47)
    body = bytearray()
    try:
        for chunk in resp.iter_raw():
            while chunk:
                if inflater is None:
                    body += chunk
                    chunk = b""
                else:
                    body += inflater.decompress(chunk, _INFLATE_STEP)
                    chunk = inflater.unconsumed_tail
                if len(body) > limit:
                    raise too_big(what, limit)
        if inflater is not None:
            body += inflater.flush()
    except zlib.error:
        raise SourceError(f"{what}: answer is not valid {encoding}; {RETRY_NEXT_SYNC}") from None
    if len(body) > limit:
        raise too_big(what, limit)
    return bytes(body)


def unreadable(what: str, err: BaseException) -> SourceError:
    """The one-line error for a body that does not decode as JSON text."""
    if isinstance(err, UnicodeDecodeError):
        problem = "is not UTF-8 text"
    elif isinstance(err, RecursionError):
        problem = "is nested too deeply to be data (a JSON bomb?)"
    else:  # JSONDecodeError, or an integer of thousands of digits
        problem = f"is not valid JSON (truncated?): {err}".split("\n")[0]
    return SourceError(f"{what}: the answer {problem}; {RETRY_NEXT_SYNC}")


def too_big(what: str, limit: int = MAX_RESPONSE_BYTES) -> SourceError:
    return SourceError(
        f"{what}: answer larger than {limit >> 20} MB (decompressed); {RETRY_NEXT_SYNC}"
    )


def parse_json(body: bytes, what: str) -> Any:
    """A JSON body; SourceError naming the problem when it is empty, truncated or garbled."""
    if not body.strip():
        raise SourceError(f"{what}: answered an empty body; {RETRY_NEXT_SYNC}")
    try:
        # Strictly UTF-8 (RFC 8259), as Google's client reads it: json.loads(bytes) would
        # also guess UTF-16/32, which no provider sends.
        return json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError) as err:
        raise unreadable(what, err) from None


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
    """Send one request with the shared retry policy; 4xx other than 429 are returned.

    The answer comes back fully read (within MAX_RESPONSE_BYTES) and already inflated.
    `what` starts with the provider's source name ("whoop /v2/cycle"): the budget it draws on.
    """
    provider = what.split(" ", 1)[0]
    rate_waits = 0
    kwargs["headers"] = {"Accept-Encoding": ACCEPT_ENCODING, **(kwargs.get("headers") or {})}

    def once() -> httpx.Response:
        nonlocal rate_waits
        if window is not None:
            window.wait()
        spend(provider)
        try:
            with client.stream(method, url, **kwargs) as streamed:
                body = read_body(streamed, what)
        except httpx.TransportError as err:
            raise RetryableError(f"network error: {type(err).__name__}") from None
        headers = [(k, v) for k, v in streamed.headers.multi_items() if k not in _HOP_HEADERS]
        resp = httpx.Response(
            streamed.status_code, headers=headers, content=body, request=streamed.request
        )
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
