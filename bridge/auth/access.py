"""The local web page's access tokens, kept in the keyring: each person's, and the
household admin's."""

from __future__ import annotations

import hashlib
import hmac

from bridge.auth.tokens import KeyringToken

KEYRING_USER = "web-access-token"
_TOKEN = KeyringToken(KEYRING_USER)

get_access_token = _TOKEN.get
ensure_access_token = _TOKEN.ensure

# The household admin's token: lists the people, reads nobody's data.
ADMIN_KEYRING_USER = "web-admin-token"
_ADMIN = KeyringToken(ADMIN_KEYRING_USER, household=True)
get_admin_token = _ADMIN.get
ensure_admin_token = _ADMIN.ensure


CHECKIN_PREFIX = "rbci_"


def checkin_token(access_token: str) -> str:
    """The token a check-in notification's buttons carry: it writes a check-in for the
    person whose access token it comes from and opens nothing else (bridge/web/app.py).
    An HMAC, so it never gives the access token back; rotating that token revokes it."""
    digest = hmac.new(access_token.encode(), b"rhythm-bridge checkin v1", hashlib.sha256)
    return CHECKIN_PREFIX + digest.hexdigest()
