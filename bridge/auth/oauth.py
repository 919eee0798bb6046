"""OAuth pieces every provider shares: state, PKCE, the pasted redirect, a loopback listener,
and a cross-process lock so a rotating refresh token is never spent twice.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

from bridge.errors import BridgeError, InputError
from bridge.files import private_dir


def new_state() -> str:
    """A CSRF `state` of 32 URL-safe characters (ORY Hydra rejects fewer than 8)."""
    return secrets.token_urlsafe(24)


@dataclass(frozen=True)
class Pkce:
    verifier: str
    challenge: str
    method: str = "S256"

    @classmethod
    def new(cls) -> Pkce:
        verifier = secrets.token_urlsafe(48)
        digest = hashlib.sha256(verifier.encode()).digest()
        return cls(verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode())


def authorization_url(base: str, **params: str) -> str:
    sep = "&" if "?" in base else "?"
    return base + sep + urlencode(params)


def code_from_redirect(pasted: str, expected_state: str) -> str:
    """The `code` from a pasted redirect URL (state checked) or a bare pasted code."""
    text = pasted.strip()
    if not text:
        raise InputError("nothing was pasted; paste the whole address the browser was sent to")
    if "://" not in text and "code=" not in text:
        return text  # a bare code: nothing to check the state against
    query = parse_qs(urlsplit(text).query or text.split("?", 1)[-1])
    if "error" in query:
        detail = query.get("error_description", query["error"])[0]
        raise BridgeError(f"the provider refused the authorization: {detail}")
    if query.get("state", [""])[0] != expected_state:
        raise InputError(
            "the pasted address carries a different `state`; it belongs to another attempt. "
            "Start again and paste the address from this attempt"
        )
    codes = query.get("code")
    if not codes:
        raise InputError("the pasted address has no `code=` parameter")
    return codes[0]


def wait_for_redirect(host: str, port: int, timeout: float = 300.0) -> str:
    """Serve one request on http://host:port/ and return its full URL (loopback flow)."""
    got: dict[str, str] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            got["url"] = f"http://{host}:{port}{self.path}"
            body = b"rhythm-bridge: authorization received; you can close this tab."
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # the query string carries the code: never log it

    server = HTTPServer((host, port), Handler)
    server.timeout = timeout
    try:
        server.handle_request()
    finally:
        server.server_close()
    if "url" not in got:
        raise BridgeError(f"no browser came back to http://{host}:{port}/ within {timeout:.0f}s")
    return got["url"]


_thread_locks: dict[str, threading.Lock] = {}


@contextmanager
def refresh_lock(path: Path) -> Iterator[None]:
    """Exclusive across threads and processes: one refresh of a rotating token at a time."""
    lock = _thread_locks.setdefault(str(path), threading.Lock())
    private_dir(path.parent)
    with lock:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)
