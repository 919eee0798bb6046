"""Errors, named after what the daemon should do next.

    BridgeError                  root; the CLI prints `str(err)` as one line and exits 2
    ├── ConfigError              fix the config file / env var named in the message
    ├── InputError               bad file or payload: nothing was written, fix or skip the input
    ├── SourceError              a source failed during a sync (recorded on its SyncState)
    │   ├── AuthExpired          stop pulling it, status `reauth_required`, tell the person
    │   ├── RateLimited          back off until `retry_after` seconds have passed
    │   ├── Transient            network / 5xx: retry later with backoff
    │   └── CursorInvalid        the sync token is stale (Google 410): drop it, full resync
    └── StoreError               the database is unusable (locked, newer schema, ...)

Vendor exceptions are translated into these once, at the edge of each connector.
"""

from __future__ import annotations


class BridgeError(Exception):
    """Root of every error the CLI turns into a one-line message."""


class ConfigError(BridgeError):
    """The configuration is invalid; the message names the file and the key."""


class InputError(BridgeError):
    """An input file or payload is unusable; the message names it and the problem."""


class SourceError(BridgeError):
    """A source failed during a sync."""

    status = "error"


class AuthExpired(SourceError):
    """The stored credentials no longer work; the person must re-run the auth command."""

    status = "reauth_required"

    def __init__(self, source: str, detail: str = "") -> None:
        self.source = source
        msg = f"{source}: authorization expired or revoked; run `rhythm-bridge auth {source}`"
        super().__init__(f"{msg} ({detail})" if detail else msg)


class RateLimited(SourceError):
    """The provider asked us to slow down."""

    status = "rate_limited"

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(message)


class Transient(SourceError):
    """Network trouble or a server error; worth retrying later."""


class CursorInvalid(SourceError):
    """The stored cursor is no longer accepted; a full resync is needed."""


class StoreError(BridgeError):
    """The database cannot be used as it is."""
