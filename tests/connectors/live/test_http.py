"""The shared retry policy: how long to wait, and the request budget."""

from __future__ import annotations

import json
import zlib
from email.utils import formatdate

import httpx
import pytest
import respx

from bridge.config import load_settings
from bridge.errors import SourceError, Transient
from connectors.http import (
    RateWindow,
    RetryableError,
    RetryPolicy,
    parse_json,
    request,
    retry_after_seconds,
    with_retries,
)


def test_retry_after_forms() -> None:
    now = 1_800_000_000.0
    assert retry_after_seconds({"retry-after": "14"}, now) == 14
    assert retry_after_seconds(
        {"retry-after": formatdate(now + 90, usegmt=True)}, now
    ) == pytest.approx(90, abs=1)
    assert retry_after_seconds({"x-ratelimit-reset": "37"}, now) == 37
    assert retry_after_seconds({"x-ratelimit-reset": str(now + 120)}, now) == 120  # an epoch
    assert retry_after_seconds({}, now) == 60


def test_backoff_is_jittered_and_capped() -> None:
    policy = RetryPolicy(max_attempts=10, base=1.0, cap=8.0)
    delays = [policy.delay(attempt) for attempt in range(10) for _ in range(20)]
    assert all(0 <= d <= 8.0 for d in delays)
    assert len({round(d, 6) for d in delays}) > 100  # random, not a fixed schedule


def test_with_retries_is_bounded(_no_real_keyring_no_waiting: list[float]) -> None:
    calls = []

    def always_fails() -> None:
        calls.append(1)
        raise RetryableError("boom")

    with pytest.raises(Transient, match="gave up after 3 attempts"):
        with_retries(always_fails, RetryPolicy(max_attempts=3), "test", (RetryableError,))
    assert len(calls) == 3 and len(_no_real_keyring_no_waiting) == 2


def test_rate_window_waits_once_the_budget_is_spent(
    _no_real_keyring_no_waiting: list[float],
) -> None:
    window = RateWindow(limit=3, window=60.0)
    for _ in range(3):
        window.wait()
    assert _no_real_keyring_no_waiting == []
    window.wait()
    assert len(_no_real_keyring_no_waiting) == 1 and 59 < _no_real_keyring_no_waiting[0] <= 60


def test_the_keyring_key_variable_is_not_a_setting() -> None:
    settings = load_settings(environ={"RHYTHM_BRIDGE_KEYRING_KEY": "secret-key-material"})
    assert "secret-key-material" not in settings.model_dump_json()


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "identity"])
def test_request_inflates_a_body_and_answers_it_fully_read(encoding: str) -> None:
    doc = {"records": [{"id": n, "note": "x" * 100} for n in range(2000)]}
    raw = json.dumps(doc).encode()
    packer = zlib.compressobj(wbits=31 if encoding == "gzip" else 15)
    body = raw if encoding == "identity" else packer.compress(raw) + packer.flush()
    with respx.mock() as mock, httpx.Client() as client:
        route = mock.get("https://api.example/x").mock(
            return_value=httpx.Response(200, content=body, headers={"content-encoding": encoding})
        )
        resp = request(client, "GET", "https://api.example/x", what="t", policy=RetryPolicy())
    assert route.calls[0].request.headers["accept-encoding"] == "gzip, deflate"
    assert parse_json(resp.content, "t") == doc and "content-encoding" not in resp.headers


def test_an_encoding_it_cannot_inflate_is_one_clear_error() -> None:
    with respx.mock() as mock, httpx.Client() as client:
        mock.get("https://api.example/x").mock(
            return_value=httpx.Response(
                200, content=b"\x8b\x00", headers={"content-encoding": "br"}
            )
        )
        with pytest.raises(
            SourceError, match=r"^t: answered in an unsupported encoding 'br'; nothing was stored"
        ):
            request(client, "GET", "https://api.example/x", what="t", policy=RetryPolicy())


def test_every_client_shares_one_tls_context_with_httpxs_trust() -> None:
    # Building a TLS context reads the CA bundle: ~10 ms of CPU per sync when every
    # connector's client made its own (a worker pulling 1,000 accounts paid it each time).
    from connectors.http import new_client

    first, second = new_client(5.0), new_client(5.0, follow_redirects=True)
    try:
        contexts = [c._transport._pool._ssl_context for c in (first, second)]  # type: ignore[attr-defined]
        assert contexts[0] is contexts[1]
        assert contexts[0].verify_mode == httpx.create_ssl_context().verify_mode
        assert second.follow_redirects and first.timeout.read == 5.0
    finally:
        first.close()
        second.close()
