"""Serving the app with uvicorn: in the foreground (`serve`) or in a thread (`run`)."""

from __future__ import annotations

import logging
import signal
import socket
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from bridge.config import Settings
from bridge.errors import ConfigError
from bridge.store import Store

log = logging.getLogger("rhythm_bridge.web")
START_TIMEOUT = 15.0


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, so a busy port is one clear error before anything starts."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as err:
        sock.close()
        raise ConfigError(
            f"[web] cannot listen on {host}:{port} ({err.strerror}); "
            "change [web] host/port or stop what uses it"
        ) from None
    sock.listen(64)
    sock.set_inheritable(True)
    return sock


def make_server(
    settings: Settings,
    store: Store,
    *,
    host: str,
    clock: Callable[[], datetime] | None = None,
    page: bool = True,
) -> Any:
    import uvicorn

    from bridge.web.app import create_app

    app = create_app(settings, store, host=host, clock=clock, page=page)
    # No access log: request lines would put the person's activity into the journal.
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    return uvicorn.Server(config)


def serve(settings: Settings, store: Store, host: str, port: int) -> None:
    """Serve until SIGINT/SIGTERM, then stop cleanly (exit status 0)."""
    web = BackgroundServer(settings, store, host=host, port=port)
    stopping = threading.Event()

    def stop(signum: int, _frame: Any) -> None:
        log.info("received %s, stopping the page", signal.Signals(signum).name)
        stopping.set()

    before = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        web.start()
        while not stopping.wait(0.5) and web.thread.is_alive():
            pass
    finally:
        web.stop()
        for sig, handler in before.items():
            signal.signal(sig, handler)


class BackgroundServer:
    """The page in a thread next to the scheduler; `stop()` ends it and waits."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        *,
        host: str | None = None,
        port: int | None = None,
        clock: Callable[[], datetime] | None = None,
        page: bool = True,
    ) -> None:
        self.host = settings.web.host if host is None else host
        self.sock = bind(self.host, settings.web.port if port is None else port)
        self.port = self.sock.getsockname()[1]
        try:
            self.server = make_server(settings, store, host=self.host, clock=clock, page=page)
        except BaseException:
            self.sock.close()
            raise
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, name="web", daemon=True
        )

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> BackgroundServer:
        self.thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise ConfigError(f"[web] the page did not start on {self.url}")
            time.sleep(0.02)
        log.info("web page on %s", self.url)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(timeout=10)
        self.sock.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()
