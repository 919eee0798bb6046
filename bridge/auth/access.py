"""The local web page's access token, kept in the keyring."""

from __future__ import annotations

from bridge.auth.tokens import KeyringToken

KEYRING_USER = "web-access-token"
_TOKEN = KeyringToken(KEYRING_USER)

get_access_token = _TOKEN.get
ensure_access_token = _TOKEN.ensure
