"""The calendar feed's token: its own secret in the keyring, separate from the page's.

A calendar app keeps the feed URL (token inside) on someone else's server, so it must not
open the page: it reads the feed and nothing else, and revoking it leaves the page alone.
"""

from __future__ import annotations

from bridge.auth.tokens import KeyringToken

KEYRING_USER = "calendar-feed-token"
_TOKEN = KeyringToken(KEYRING_USER)

# get: None when there is none (never made, revoked) or no keyring; ensure(rotate=True):
# a new one, the old URL stops working; revoke: the feed answers 404 until a new one.
get_feed_token = _TOKEN.get
ensure_feed_token = _TOKEN.ensure
revoke_feed_token = _TOKEN.revoke
