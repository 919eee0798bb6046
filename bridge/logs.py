"""Logging: one line per event (key=value text, or JSON), secrets redacted on the way out.

Redaction happens in a handler filter, so it covers messages, arguments and tracebacks
from any library, not only our own log calls. Known secret values (tokens the daemon
loaded) are registered with `register_secret`; well-known shapes (bearer tokens,
`access_token=...`) are masked even when nobody registered them.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Any

from bridge.errors import printable, strip_controls

MASK = "[redacted]"
_HANDLER_NAME = "rhythm-bridge"
_PATTERNS = (
    re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"(?i)(\bapikey\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(
        r"""(?ix)
        ((?:access_token|refresh_token|id_token|client_secret|api_key|apikey|password|
            code_verifier|authorization)
         ["']?\s*[:=]\s*["']?)
        [^"'&\s,}]{4,}"""
    ),
)
# The most recently seen secrets, oldest first. Rotating tokens (WHOOP's change every hour)
# would grow this without end, and every log line pays for its size; a token rotated out
# hundreds of times ago is dead anyway.
MAX_SECRETS = 256
_secrets: dict[str, None] = {}
_longest_first: tuple[str, ...] = ()


def register_secret(value: str | None) -> None:
    """Mask this exact value wherever it would be logged from now on."""
    global _longest_first
    if not value or len(value) < 6:
        return
    if value in _secrets:
        _secrets[value] = _secrets.pop(value)  # seen again: the newest
        return
    _secrets[value] = None
    while len(_secrets) > MAX_SECRETS:
        del _secrets[next(iter(_secrets))]
    # Longest first, so a secret containing another is masked whole. Rebound, never
    # mutated: a log call on another thread reads one consistent tuple.
    _longest_first = tuple(sorted(_secrets, key=len, reverse=True))


def redact(text: str) -> str:
    for value in _longest_first:
        text = text.replace(value, MASK)
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + MASK, text)
    return text


class RedactingFilter(logging.Filter):
    """Render the message, mask secrets in it and in any traceback, keep the record.

    Control characters go too: a log line quotes titles, file names and server answers,
    and an ESC sequence in one would act on the terminal of whoever reads the log.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = printable(redact(record.getMessage()))
        record.args = None
        if record.exc_info:
            record.exc_text = strip_controls(
                redact(logging.Formatter().formatException(record.exc_info))
            )
            record.exc_info = None
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_text:
            doc["traceback"] = record.exc_text
        return json.dumps(doc, ensure_ascii=False)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is at the time of the event.

    A handler bound to the stream of the moment keeps writing to it after it is swapped
    and closed (a test runner capturing a command's output, an embedding program); a
    server thread logging later then fails with "I/O operation on closed file".
    """

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def setup_logging(level: int = logging.WARNING, *, as_json: bool = False) -> None:
    """Configure the root logger once: stderr, one line per event, secrets redacted."""
    handler = _StderrHandler()
    handler.set_name(_HANDLER_NAME)
    handler.setLevel(level)
    handler.addFilter(RedactingFilter())
    handler.setFormatter(
        JsonFormatter()
        if as_json
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s")
    )
    root = logging.getLogger()
    # Replace only our own handler: an embedding program's handlers stay, and a level it
    # lowered (say to DEBUG) is not raised again.
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(min(root.level or logging.WARNING, level))
    # APScheduler logs each job it adds and runs at INFO, in UTC: nine lines at the
    # daemon's start and two per cycle that say less than our own line. --verbose shows
    # ours; APScheduler's warnings and errors (a missed or crashed job) still come through.
    logging.getLogger("apscheduler").setLevel(
        logging.DEBUG if level <= logging.DEBUG else logging.WARNING
    )
