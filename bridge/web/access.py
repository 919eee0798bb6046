"""The web access token (kept in the keyring only) and the CSRF token derived from it.

The access token is what a phone on the home network presents (cookie or bearer header).
The CSRF token is an HMAC of it: safe to put in a page, useless for getting the token back.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress

COOKIE = "rb_access"


_LOOPBACK_NAMES = {"localhost", "ip6-localhost"}


def is_loopback(host: str) -> bool:
    """True when binding to `host` keeps the page on this machine."""
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def csrf_token(key: str) -> str:
    return hmac.new(key.encode(), b"rhythm-bridge csrf v1", hashlib.sha256).hexdigest()


def same(a: str | None, b: str | None) -> bool:
    """Constant-time equality that is False when either side is missing."""
    return bool(a) and bool(b) and hmac.compare_digest(str(a), str(b))
