"""The push endpoints: `POST /api/push/health-auto-export` and `POST /api/push/shortcut`.

Authenticated by a device's bearer token only (not the page's access token or CSRF: a
phone app is no browser). The body is read as it arrives, within `[push] max_body_mb`
(and `max_inflated_mb` once gzip is undone), into a private spool file in the data
directory; nothing is parsed until the whole body is there, and the store is written in
one transaction in a worker thread, so the server keeps answering meanwhile.
"""

from __future__ import annotations

import logging
import tempfile
import zlib
from pathlib import Path
from typing import IO, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from bridge.errors import BridgeError, InputError
from bridge.intake.push import device_for, receive

log = logging.getLogger("rhythm_bridge.push")

PUSH_PREFIX = "/api/push/"
MB = 1 << 20
SPOOL_IN_MEMORY = 4 * MB
INFLATE_STEP = 1 * MB  # never more inflated output than this per step


class Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _refusal(status: int, message: str) -> JSONResponse:
    headers = {"www-authenticate": 'Bearer realm="rhythm-bridge push"'} if status == 401 else {}
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def client_address(request: Request, trust_forwarded: bool) -> str:
    forwarded = request.headers.get("x-forwarded-for", "") if trust_forwarded else ""
    if forwarded:
        return forwarded.split(",")[0].strip()[:64]
    return request.client.host if request.client else "?"


async def spooled_body(
    request: Request, max_body: int, max_inflated: int, where: Path
) -> IO[bytes]:
    """The request body (gunzipped when sent so), in a private spool file, within the caps."""
    encoding = request.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip"):
        raise Refused(415, f"Content-Encoding {encoding!r} is not supported; send gzip or none")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_body:
        raise Refused(413, f"body of {int(declared) // MB} MB is over [push] max_body_mb")
    inflater = zlib.decompressobj(wbits=31) if encoding in ("gzip", "x-gzip") else None
    where.mkdir(mode=0o700, parents=True, exist_ok=True)  # a big body spills to disk here
    # mkstemp's files are 0600: the spool never exposes health data to other users.
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY, dir=str(where))  # noqa: SIM115
    received = written = 0
    try:
        async for chunk in request.stream():
            received += len(chunk)
            if received > max_body:
                raise Refused(413, "body is over [push] max_body_mb")
            if inflater is None:
                spool.write(chunk)
                continue
            data = chunk
            while data:
                try:
                    out = inflater.decompress(data, INFLATE_STEP)
                except zlib.error as err:
                    raise Refused(400, f"body is not valid gzip ({err})") from None
                written += len(out)
                if written > max_inflated:
                    raise Refused(413, "body inflates past [push] max_inflated_mb")
                spool.write(out)
                data = inflater.unconsumed_tail
        if inflater is not None:
            written += len(rest := inflater.flush())
            spool.write(rest)
            if not inflater.eof:
                raise Refused(400, "body is truncated gzip")
        spool.seek(0)
        return spool
    except BaseException:
        spool.close()
        raise


def _endpoint(kind: str) -> Any:
    async def push(request: Request) -> JSONResponse:
        st = request.app.state.web
        cfg = st.settings.push
        auth = request.headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        device = None
        if scheme.lower() == "bearer":
            # A device token is one person's: the push goes into that person's data only.
            for st in request.app.state.people:
                device = await run_in_threadpool(device_for, st.settings, token.strip())
                if device is not None:
                    break
        settings, store = st.settings, st.store
        client = client_address(request, cfg.trust_forwarded)
        if device is None:
            log.warning("push from %s refused: unknown or missing device token", client)
            return _refusal(401, "unknown or missing device token (Authorization: Bearer ...)")
        try:
            body = await spooled_body(
                request, cfg.max_body_mb * MB, cfg.max_inflated_mb * MB, settings.data_path
            )
        except Refused as err:
            log.warning("push from %s (%s) refused: %s", device, client, err)
            return _refusal(err.status, str(err))
        try:
            summary = await run_in_threadpool(
                receive,
                store,
                settings,
                device,
                kind,
                body,
                aggregation=request.headers.get("automation-aggregation"),
            )
        except InputError as err:
            log.warning("push from %s (%s) refused: %s", device, client, err)
            return _refusal(400, str(err))
        except BridgeError as err:
            return _refusal(503, str(err))
        finally:
            body.close()
        return JSONResponse(summary.document())

    return push


def routes() -> list[Route]:
    return [
        Route(
            f"{PUSH_PREFIX}health-auto-export", _endpoint("health-auto-export"), methods=["POST"]
        ),
        Route(f"{PUSH_PREFIX}shortcut", _endpoint("shortcut"), methods=["POST"]),
    ]
