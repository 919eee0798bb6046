"""The calendar feed's token: its own secret in the keyring, separate from the page's.

A calendar app keeps the feed URL (token inside) on someone else's server, so it must not
open the page: it reads the feed and nothing else, and revoking it leaves the page alone.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from bridge.errors import ConfigError

if TYPE_CHECKING:
    from bridge.config import Settings

KEYRING_USER = "calendar-feed-token"


def get_feed_token(settings: Settings) -> str | None:
    """The stored token, or None when there is none (never made, revoked) or no keyring."""
    from bridge.auth.secrets import Secrets

    try:
        return Secrets.from_settings(settings).get(KEYRING_USER)
    except ConfigError:
        return None


def ensure_feed_token(settings: Settings, *, rotate: bool = False) -> str:
    """The stored token, made (or replaced: the old URL stops working) when needed."""
    from bridge.auth.secrets import Secrets

    store = Secrets.from_settings(settings)
    token = None if rotate else store.get(KEYRING_USER)
    if not token:
        token = secrets.token_urlsafe(32)
        store.set(KEYRING_USER, token)
    return token


def revoke_feed_token(settings: Settings) -> None:
    """Forget the token: the feed answers 404 until a new one is made."""
    from bridge.auth.secrets import Secrets

    Secrets.from_settings(settings).delete(KEYRING_USER)
