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

import re

# C0 and C1 control characters (ESC, CSI, BEL, backspace, carriage return...) and the
# Unicode bidi overrides: text from a file, a feed or an API carrying them could retitle
# the terminal, clear it, or hide part of a message. Tab and newline become spaces.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_BREAKS = re.compile("[\t\n]")


def strip_controls(text: str) -> str:
    """`text` without control characters; newlines and tabs kept (a traceback's lines)."""
    return _CONTROL.sub("", text)


def printable(text: str) -> str:
    """`text` without control characters, on one line: safe for a terminal, a log, a column."""
    if text.isprintable():
        return text
    return _CONTROL.sub("", _BREAKS.sub(" ", text))


class BridgeError(Exception):
    """Root of every error the CLI turns into a one-line message.

    The message is made printable here, once: errors quote what files and servers sent,
    and end up on terminals, in logs and in the stored last error of a source.
    """

    def __init__(self, *args: object) -> None:
        if args and isinstance(args[0], str):
            args = (printable(args[0]), *args[1:])
        super().__init__(*args)


class ConfigError(BridgeError):
    """The configuration is invalid; the message names the file and the key."""


class InputError(BridgeError):
    """An input file or payload is unusable; the message names it and the problem."""


class SourceError(BridgeError):
    """A source failed during a sync."""

    status = "error"


class AuthExpired(SourceError):
    """The stored credentials no longer work; the person must re-run the auth command.

    `command` is the one that fixes it (`connectors.registry.auth_command`): the caller
    passes it, because this bottom layer knows no source.
    """

    status = "reauth_required"

    def __init__(self, source: str, detail: str = "", *, command: str) -> None:
        self.source = source
        msg = f"{source}: authorization expired or revoked; run `{command}`"
        super().__init__(f"{msg} ({detail})" if detail else msg)


class NotConnected(SourceError):
    """No credentials were ever stored for this source: nothing expired, nothing to retry."""

    status = "not_connected"

    def __init__(self, source: str, *, command: str) -> None:
        self.source = source
        super().__init__(f"{source}: not connected: run `{command}`")


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


class Cancelled(BridgeError):
    """The daemon is stopping: the step in progress rolled back, the next cycle redoes it."""

    def __init__(self, message: str = "stopped at a step boundary; nothing partial stored"):
        super().__init__(message)


class StoreError(BridgeError):
    """The database cannot be used as it is."""
