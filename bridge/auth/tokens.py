"""A random token of this installation kept in the keyring under its own name.

The web page's access token and the calendar feed's token are two of them: each is made on
first use, can be rotated (the old one stops working at once) or forgotten, and is only
ever stored through `bridge.auth.secrets`, so a headless server keeps it in the
encrypted-file keyring.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from bridge.errors import ConfigError

if TYPE_CHECKING:
    from bridge.auth.secrets import Secrets
    from bridge.config import Settings


# The keyring "person" of what belongs to the installation, not to a person (the household
# admin's token): no person's name can start with "_", so it never meets anyone's entries.
HOUSEHOLD = "_household"


class KeyringToken:
    def __init__(self, name: str, *, household: bool = False) -> None:
        self.name = name
        self.household = household

    def _secrets(self, settings: Settings) -> Secrets:
        from bridge.auth.secrets import Secrets

        found = Secrets.from_settings(settings)
        return Secrets(found.backend, HOUSEHOLD) if self.household else found

    def get(self, settings: Settings) -> str | None:
        """The stored token, or None when there is none or no usable keyring."""
        try:
            return self._secrets(settings).get(self.name)
        except ConfigError:
            return None

    def ensure(self, settings: Settings, *, rotate: bool = False) -> str:
        """The stored token, made (or replaced) first when needed; ConfigError without a
        keyring."""
        store = self._secrets(settings)
        token = None if rotate else store.get(self.name)
        if not token:
            token = secrets.token_urlsafe(32)
            store.set(self.name, token)
        return token

    def revoke(self, settings: Settings) -> None:
        self._secrets(settings).delete(self.name)
