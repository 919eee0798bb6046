"""The local web page's access tokens, kept in the keyring: each person's, and the
household admin's."""

from __future__ import annotations

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
