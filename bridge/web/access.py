"""The web access token (kept in the keyring only) and the CSRF token derived from it.

The access token is what a phone on the home network presents (cookie or bearer header).
The CSRF token is an HMAC of it: safe to put in a page, useless for getting the token back.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from typing import TYPE_CHECKING

from bridge.errors import ConfigError

KEYRING_USER = "web-access-token"
COOKIE = "rb_access"
_LOOPBACK_NAMES = {"localhost", "ip6-localhost"}


if TYPE_CHECKING:
    from bridge.config import Settings


def is_loopback(host: str) -> bool:
    """True when binding to `host` keeps the page on this machine."""
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def get_access_token(settings: Settings) -> str | None:
    """The stored token, or None when there is none or no usable keyring."""
    from bridge.secrets import Secrets

    try:
        return Secrets.from_settings(settings).get(KEYRING_USER)
    except ConfigError:
        return None


def ensure_access_token(settings: Settings, *, rotate: bool = False) -> str:
    """The stored token, made (or replaced) first when needed; ConfigError without a keyring.

    Kept through bridge.secrets, so a headless server uses the encrypted-file keyring.
    """
    from bridge.secrets import Secrets

    store = Secrets.from_settings(settings)
    token = None if rotate else store.get(KEYRING_USER)
    if not token:
        token = secrets.token_urlsafe(32)
        store.set(KEYRING_USER, token)
    return token


def csrf_token(key: str) -> str:
    return hmac.new(key.encode(), b"rhythm-bridge csrf v1", hashlib.sha256).hexdigest()


def same(a: str | None, b: str | None) -> bool:
    """Constant-time equality that is False when either side is missing."""
    return bool(a) and bool(b) and hmac.compare_digest(str(a), str(b))
