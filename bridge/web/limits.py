"""The request body cap: enforced while the body is read, answered 413.

A Content-Length over the cap is refused before a byte is read; a body that lies about its
length (or is chunked) is counted as it arrives and cut off at the cap, so no request can
make the server hold more than `web.max_body_kb` of it. Every route is covered, present
and future, because this is middleware rather than a check in each endpoint.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int, own_caps: tuple[str, ...] = ()) -> None:
        # `own_caps`: path prefixes whose endpoints read within a larger cap of their own
        # (the push endpoints: a phone's first push can be 50 MB).
        self.app, self.max_bytes, self.own_caps = app, max_bytes, own_caps

    def _too_large(self) -> HTTPException:
        return HTTPException(
            413, f"request body larger than {self.max_bytes // 1024} KB (web.max_body_kb)"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path", "").startswith(self.own_caps):
            await self.app(scope, receive, send)
            return
        declared = 0
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = self.max_bytes + 1  # not a length: refuse it as too long
        seen = 0

        async def counted() -> Message:
            # Raised inside the endpoint's read, so the app's HTTPException handler answers
            # (JSON under /api/, the error page elsewhere, security headers either way).
            nonlocal seen
            if declared > self.max_bytes:
                raise self._too_large()
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise self._too_large()
            return message

        await self.app(scope, counted, send)
