"""Apple data pushed by the phone: device tokens, and one push stored in one transaction.

Apple Health has no server API, so the phone sends: the iOS app Health Auto Export (its
REST API automation) or a Shortcut posts JSON to the web server's push endpoints. Each
device has its own bearer token, made by `rhythm-bridge push-token create NAME` and kept
in the keyring as a SHA-256 digest only (the token itself is shown once), compared in
constant time.

A push is all or nothing: its records go through the importers' writer inside one
transaction, so a body that turns out to be broken halfway stores nothing. Pushed
readings are stored under the source `apple_push`; where an `export.zip` import covers the
same days, the meters read the export (see `mappings.frames`), so the two paths never
count the same day twice.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from bridge.auth.secrets import Secrets
from bridge.config import Settings
from bridge.errors import InputError
from bridge.intake.ingest import ImportSummary, write_records
from bridge.store import Store, upsert
from bridge.store.db import person_of, utcnow
from bridge.store.models import SyncState
from connectors import health_auto_export, shortcut
from connectors.base import ReadContext
from connectors.registry import PUSH_KINDS

log = logging.getLogger("rhythm_bridge.push")

TOKENS_SECRET = "push-tokens"
SOURCE = health_auto_export.SOURCE  # both push formats store under one source
DEVICE_STREAM = "device"
TOKEN_PREFIX = "rbp_"
KINDS = tuple(PUSH_KINDS)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _check_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > 64 or not set(name) <= _NAME_CHARS:
        raise InputError(
            f"device name {name!r}: use 1-64 letters, digits, '-', '_' or '.' (e.g. jane-iphone)"
        )
    return name


def _tokens(secrets_: Secrets) -> dict[str, Any]:
    return secrets_.get_json(TOKENS_SECRET) or {}


def create_token(settings: Settings, name: str, *, replace: bool = False) -> str:
    """A new token for the device `name` (shown once; only its digest is kept)."""
    name = _check_name(name)
    store = Secrets.from_settings(settings)
    tokens = _tokens(store)
    if name in tokens and not replace:
        raise InputError(
            f"device {name!r} already has a push token; revoke it first "
            f"(rhythm-bridge push-token revoke {name}) or pass --replace"
        )
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    tokens[name] = {"sha256": _digest(token), "created": utcnow().isoformat()}
    store.set_json(TOKENS_SECRET, tokens)
    return token


def list_tokens(settings: Settings) -> list[dict[str, str]]:
    tokens = _tokens(Secrets.from_settings(settings))
    return [{"device": n, "created": str(v.get("created", ""))} for n, v in sorted(tokens.items())]


def revoke_token(settings: Settings, name: str) -> bool:
    store = Secrets.from_settings(settings)
    tokens = _tokens(store)
    if tokens.pop(name.strip(), None) is None:
        return False
    store.set_json(TOKENS_SECRET, tokens)
    return True


def device_for(settings: Settings, token: str | None) -> str | None:
    """The device whose token this is, or None; every stored digest is compared (in
    constant time), so the answer's timing says nothing about which one matched."""
    if not token:
        return None
    digest = _digest(token)
    found = None
    for name, entry in _tokens(Secrets.from_settings(settings)).items():
        if hmac.compare_digest(digest, str(entry.get("sha256", ""))):
            found = name
    return found


@dataclass
class PushSummary:
    """The answer to one push: what came in and what became of it."""

    device: str
    kind: str
    received: int = 0
    stored: int = 0
    known: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def document(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "kind": self.kind,
            "received": self.received,
            "stored": self.stored,
            "already_known": self.known,
            "skipped": dict(sorted(self.skipped.items())),
            "seconds": round(self.seconds, 3),
        }


def _records(kind: str, body: IO[bytes], ctx: ReadContext, aggregation: str | None, stats: Any):
    if kind == "health-auto-export":
        return health_auto_export.read_stream(body, ctx, aggregation=aggregation, stats=stats)
    if kind == "shortcut":
        return shortcut.read_stream(body, ctx, stats=stats)
    raise InputError(f"unknown push kind {kind!r}; use one of {', '.join(KINDS)}")


def _counting(records: Iterator[Any], summary: PushSummary) -> Iterator[Any]:
    for rec in records:
        summary.received += 1
        yield rec


def receive(
    store: Store,
    settings: Settings,
    device: str,
    kind: str,
    body: IO[bytes],
    *,
    aggregation: str | None = None,
    now: datetime | None = None,
    progress: Callable[[int], None] | None = None,
) -> PushSummary:
    """Store one push in one transaction; InputError (nothing stored) if it is unusable.

    The device's row in `sync_state` records the push (or its error) either way.
    """
    started = time.perf_counter()
    now = (now or datetime.now(UTC)).astimezone(UTC)
    summary = PushSummary(device=device, kind=kind)
    ctx = ReadContext(tz=settings.tz, now=now)
    stats = health_auto_export.PushStats()
    written = ImportSummary(kind=SOURCE, path=f"push from {device}")
    try:
        records = _counting(_records(kind, body, ctx, aggregation, stats), summary)
        with store.transaction() as session:
            write_records(session, SOURCE, records, written, now=now, progress=progress)
            _record_device(session, device, now, records=written.records)
    except InputError as err:
        _record_error(store, device, now, str(err))
        raise
    summary.stored = written.new
    summary.known = written.records - written.new
    summary.skipped = {
        **{f"unreadable or implausible {k}": v for k, v in written.skipped.items()},
        **{f"unknown metric {k}": v for k, v in stats.unknown.items()},
    }
    summary.received += sum(stats.unknown.values())
    summary.seconds = time.perf_counter() - started
    log.info(
        "push from %s (%s): %d received, %d stored, %d already known, %d skipped",
        device,
        kind,
        summary.received,
        summary.stored,
        summary.known,
        sum(summary.skipped.values()),
    )
    return summary


def _device_row(device: str, **fields: Any) -> dict[str, Any]:
    return {"source": SOURCE, "stream": DEVICE_STREAM, "partition": device, **fields}


def _record_device(session: Any, device: str, now: datetime, *, records: int) -> None:
    upsert(
        session,
        SyncState,
        [
            _device_row(
                device,
                status="ok",
                last_attempt_at=now,
                last_success_at=now,
                last_records=records,
                records_total=0,
            )
        ],
        keys=("source", "stream", "partition"),
        update=("status", "last_attempt_at", "last_success_at", "last_records"),
    )
    # One statement adds to the total, so two pushes at once cannot lose a count.
    table = SyncState.__table__  # type: ignore[attr-defined]
    session.execute(
        table.update()
        .where(
            table.c.person == person_of(session),
            table.c.source == SOURCE,
            table.c.stream == DEVICE_STREAM,
            table.c.partition == device,
        )
        .values(records_total=table.c.records_total + records)
    )


def _record_error(store: Store, device: str, now: datetime, error: str) -> None:
    with store.transaction() as session:
        upsert(
            session,
            SyncState,
            [
                _device_row(
                    device,
                    status="error",
                    last_attempt_at=now,
                    last_error_at=now,
                    last_error=error[:500],
                )
            ],
            keys=("source", "stream", "partition"),
            update=("status", "last_attempt_at", "last_error_at", "last_error"),
        )


def devices(store: Store) -> list[dict[str, Any]]:
    """Each device's last push, for `status`."""
    from sqlalchemy import select
    from sqlmodel import col

    with store.session() as session:
        rows = session.execute(
            select(SyncState)
            .where(col(SyncState.source) == SOURCE, col(SyncState.stream) == DEVICE_STREAM)
            .order_by(SyncState.partition)
        ).scalars()
        return [
            {
                "device": r.partition,
                "status": r.status,
                "last_push": r.last_success_at,
                "last_records": r.last_records,
                "records_total": r.records_total,
                "last_error": r.last_error,
                "last_error_at": r.last_error_at,
            }
            for r in rows
        ]
