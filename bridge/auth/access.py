"""The local web page's access token, kept in the keyring."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from bridge.errors import ConfigError

if TYPE_CHECKING:
    from bridge.config import Settings


KEYRING_USER = "web-access-token"


def get_access_token(settings: Settings) -> str | None:
    """The stored token, or None when there is none or no usable keyring."""
    from bridge.auth.secrets import Secrets

    try:
        return Secrets.from_settings(settings).get(KEYRING_USER)
    except ConfigError:
        return None


def ensure_access_token(settings: Settings, *, rotate: bool = False) -> str:
    """The stored token, made (or replaced) first when needed; ConfigError without a keyring.

    Kept through bridge.auth.secrets, so a headless server uses the encrypted-file keyring.
    """
    from bridge.auth.secrets import Secrets

    store = Secrets.from_settings(settings)
    token = None if rotate else store.get(KEYRING_USER)
    if not token:
        token = secrets.token_urlsafe(32)
        store.set(KEYRING_USER, token)
    return token
