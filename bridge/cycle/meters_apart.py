"""The daemon's meter step in a short-lived child process.

The meter step is the one part of a cycle that needs pandas (the `mappings/` frames): about
45 MB of imports and a peak of frames that glibc keeps for good once freed on a worker
thread. Run inside the daemon, that memory stays for its whole life, between cycles that
come every 15 minutes; run in a child, the daemon idles without it (benchmarks/idle_rss.py)
and it cannot creep up over weeks (benchmarks/soak.py). The price is the child's start,
about a second of CPU per cycle on a desktop, a few on a Raspberry Pi.

The child is started when the cycle starts (`MeterChild`), so that its imports (most of its
start) run while the cycle syncs, mostly waiting on the network, and it is ready when the
meter step comes. It computes exactly what `recompute_meters` computes in-process (it is that
function), in the same transactions: a child that is stopped or killed, by the daemon's
stop or by the kernel running out of memory, leaves the slots of its open chunk
uncommitted and the meter state where it was, and the next cycle redoes them.

Parent to child on stdin, pickled: the store's URL (it may carry a password, so not on the
command line), the settings, `now` and how to log. Child to parent on stdout, one JSON
line: the number of slots computed, or the error's class and one-line message.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
from datetime import datetime
from typing import Any

from bridge.config import Settings
from bridge.errors import BridgeError, Cancelled, ConfigError, StoreError
from bridge.store import Store

log = logging.getLogger("rhythm_bridge.cycle")

# How often the parent looks at the stop flag while the child works.
POLL_SECONDS = 0.2
# A child ended by SIGTERM: how long to wait for the daemon's own stop flag.
STOP_GRACE = 2.0
# The errors the child can name; anything else comes back as a BridgeError.
_ERRORS: dict[str, type[BridgeError]] = {
    cls.__name__: cls for cls in (BridgeError, ConfigError, StoreError)
}


def _log_setup() -> tuple[int, bool]:
    """The parent's log level and format, for the child to log the same way."""
    from bridge.logs import _HANDLER_NAME, JsonFormatter

    root = logging.getLogger()
    ours = [h for h in root.handlers if h.get_name() == _HANDLER_NAME]
    as_json = bool(ours) and isinstance(ours[0].formatter, JsonFormatter)
    level = ours[0].level if ours else logging.WARNING
    return level, as_json


class MeterChild:
    """A child started ahead of its job: it imports while the cycle does its other steps.

    As a context manager: a cycle that ends before its meter step (a stop, an error) ends
    the child, which has done nothing but import.
    """

    def __init__(self) -> None:
        # -P: the daemon's working directory is not put on the child's import path.
        self.process = subprocess.Popen(
            [sys.executable, "-P", "-m", "bridge.cycle.meters_apart"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def __enter__(self) -> MeterChild:
        return self

    def __exit__(self, *exc: object) -> None:
        child = self.process
        if child.poll() is None:
            child.kill()
            child.wait()
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def recompute_apart(
    store: Store,
    settings: Settings,
    now: datetime,
    *,
    stop: threading.Event | None = None,
    child: MeterChild | None = None,
) -> int:
    """`recompute_meters(store, settings, now)` in a child process; the slots computed.

    `child`: one started earlier (a new one if None). With `stop` set while the child
    works, the child is ended (SIGTERM: its open chunk rolls back) and Cancelled is
    raised, like any other step boundary of the cycle.
    """
    level, as_json = _log_setup()
    payload = pickle.dumps(
        {"url": store.url, "settings": settings, "now": now, "level": level, "json": as_json}
    )
    with child or MeterChild() as started:
        return _run_job(started.process, payload, stop)


def _run_job(child: subprocess.Popen[bytes], payload: bytes, stop: threading.Event | None) -> int:
    # The caller's `with MeterChild` ends the child however this returns or raises.
    assert child.stdin is not None and child.stdout is not None
    # A child that ended before reading its job: its exit status says why (below).
    with contextlib.suppress(BrokenPipeError):
        child.stdin.write(payload)
        child.stdin.flush()
    with contextlib.suppress(BrokenPipeError):
        child.stdin.close()
    while True:
        try:
            child.wait(POLL_SECONDS)
            break
        except subprocess.TimeoutExpired:
            if stop is not None and stop.is_set():
                child.terminate()
                child.wait()
                raise Cancelled() from None
    answer = child.stdout.read().decode("utf-8", "replace").strip().splitlines()
    doc: dict[str, Any] = {}
    if answer:
        try:
            doc = json.loads(answer[-1])
        except ValueError:
            doc = {}
    if child.returncode == 0 and "slots" in doc:
        return int(doc["slots"])
    if "error" in doc:
        raise _ERRORS.get(doc["error"], BridgeError)(doc["message"])
    if child.returncode < 0:
        # systemd's stop signal (or Ctrl-C) reaches the whole group at once: the child may
        # have ended before this process's own handler set the stop flag.
        stopping = -child.returncode in (signal.SIGTERM, signal.SIGINT)
        if stop is not None and (stop.is_set() or (stopping and stop.wait(STOP_GRACE))):
            raise Cancelled()
        name = signal.Signals(-child.returncode).name
        raise BridgeError(
            f"the meter step was ended by {name} (out of memory?); nothing of its unfinished "
            "chunk was stored, the next cycle computes it again"
        )
    raise BridgeError(
        f"the meter step failed (exit {child.returncode}); its traceback is in the log above"
    )


def main() -> None:
    """The child: read the job from stdin, run the meter step, answer on stdout."""
    # Ctrl-C in a terminal reaches the whole process group; the parent says what happened.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # The answer gets stdout to itself: anything else printed goes to stderr (the log), and
    # cannot fill the pipe that the parent reads only once this process has ended.
    sys.stdout.flush()
    answer = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    # Imported before the job comes, while the parent still syncs: everything the step
    # imports, its lazy imports too.
    for module in ("bridge.cycle.meter_changes", "bridge.cycle.validity", "mappings.tasks"):
        importlib.import_module(module)
    from bridge.cycle.validity import recompute_with_refit
    from bridge.logs import setup_logging

    try:
        job = pickle.load(sys.stdin.buffer)
    except EOFError:  # the cycle ended before its meter step
        return
    setup_logging(job["level"], as_json=job["json"])
    try:
        # The parent opened (and migrated) the store; the child only reads and writes it.
        store = Store(job["url"], create=False)
        try:
            slots = recompute_with_refit(store, job["settings"], job["now"])
        finally:
            store.dispose()
    except BridgeError as err:
        print(json.dumps({"error": type(err).__name__, "message": str(err)}), file=answer)
        answer.close()
        sys.exit(2)
    except Exception:
        log.exception("the meter step crashed")
        sys.exit(1)
    print(json.dumps({"slots": slots}), file=answer)
    answer.close()


if __name__ == "__main__":
    main()
