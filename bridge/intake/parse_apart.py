"""An Apple Health export parsed in a child process while this one writes.

Parsing (pyexpat and the per-record work) and writing (SQLite's upserts) each take about
half of a big import's CPU. In two threads they do not overlap: sqlite3's executemany
hands the GIL back and forth on every row. In two processes they do: the child parses
and sends batches of ready rows (bridge/intake/apple_rows.py) and the few ordinary
records through a pipe; this process writes them in its one transaction, as before.
A full pipe blocks the child, so memory stays flat in both.

Nothing changes for what is stored or when: the child never touches the store. If it
fails (a bad file: its one-line error comes back as is), crashes or is killed, the write
raises and its transaction rolls back. It never outlives this process: the kernel ends
it with SIGKILL when its parent dies (PR_SET_PDEATHSIG) and its next write to the closed
pipe would end it anyway; Ctrl-C is left to the parent, which ends the child on the way
out. Small files stay in one process (APART_MIN_BYTES: below it, the child's start costs
more than the overlap gains; benchmarks/apple_import.py --crossover).

Parent to child on stdin, pickled: the job. Child to parent on stdout: frames of a 4-byte
length and a pickled (kind, body): ("items", [...]), ("error", message) or ("done", the
child's peak RSS in kB).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import logging
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from bridge.errors import BridgeError, Cancelled, InputError
from connectors.base import ReadContext

# XML bytes from which the child pays off (measured: benchmarks/apple_import.py --crossover).
APART_MIN_BYTES = 30_000_000
ITEMS_PER_FRAME = 5000
PIPE_BYTES = 1 << 20  # the most an unprivileged process may ask for by default
# A child ended by SIGTERM: how long to wait for the daemon's own stop flag.
STOP_GRACE = 2.0
_FRAME = struct.Struct("<I")
_PR_SET_PDEATHSIG = 1

log = logging.getLogger("rhythm_bridge.ingest")


def xml_bytes(path: Path) -> int:
    """The size of the export's XML (inside the zip or not); 0 if it cannot be told."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                sizes = [
                    i.file_size
                    for i in archive.infolist()
                    if i.filename.rsplit("/", 1)[-1] == "export.xml"
                ]
            return max(sizes, default=0)
        return path.stat().st_size
    except (OSError, zipfile.BadZipFile, ValueError):
        return 0  # the ordinary path says what is wrong with it


def apple_records(
    path: Path, ctx: ReadContext, source: str, stamp: str, wall_clock: datetime
) -> Iterator[Any]:
    """The export's records and ready rows, from a child process when the file is big."""
    from bridge.intake.apple_rows import AppleRows
    from connectors import apple_health

    # RB_APPLE_PARSE_APART=0/1 forces one way, for benchmarks and tests (not a setting).
    forced = os.environ.get("RB_APPLE_PARSE_APART", "")
    if forced == "0" or (forced != "1" and xml_bytes(path) < APART_MIN_BYTES):
        hook = AppleRows(source, stamp, wall_clock)
        return apple_health.read(path, dataclasses.replace(ctx, fast_rows=hook))
    return _from_child(path, source, stamp, wall_clock, ctx.stop)


def _from_child(
    path: Path,
    source: str,
    stamp: str,
    wall_clock: datetime,
    stop: threading.Event | None = None,
) -> Iterator[Any]:
    job = {
        "path": str(path),
        "source": source,
        "stamp": stamp,
        "wall_clock": wall_clock,
        "parent": os.getpid(),
    }
    # -P: the working directory is not put on the child's import path. A session of its
    # own: Linux shares the CPU fairly between sessions (autogroups), so on a busy machine
    # a child in this session would only split this process's share and nothing would
    # overlap (measured: 15.2 s in one process, 15.6 s with a child in the same session,
    # 10.7 s in its own, at load 7 on 2 cores). Ctrl-C no longer reaches it; it ignores
    # that anyway, and it dies with this process (below).
    child = subprocess.Popen(
        [sys.executable, "-P", "-m", "bridge.intake.parse_apart"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert child.stdin is not None and child.stdout is not None
    # A pipe that holds a few frames: the child parses on while this process writes,
    # instead of waiting for each frame to be read (Linux; 64 KiB otherwise).
    with contextlib.suppress(OSError, AttributeError):
        fcntl.fcntl(child.stdout.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    try:
        with contextlib.suppress(BrokenPipeError):  # its exit status says why (below)
            child.stdin.write(pickle.dumps(job))
            child.stdin.close()
        read = child.stdout.read
        while True:
            head = read(_FRAME.size)
            if len(head) < _FRAME.size:
                break
            (size,) = _FRAME.unpack(head)
            body = read(size)
            if len(body) < size:
                break
            kind, items = pickle.loads(body)
            if kind == "items":
                yield from items
            elif kind == "error":
                raise InputError(items)
            else:
                log.debug("%s: the parser child's peak RSS was %.0f MB", path, items / 1024)
                child.wait()
                return
        child.wait()
        # systemd's stop reaches the whole group at once: the child may end before this
        # process's own handler sets the stop flag. Then it is a stop, not a failure.
        if child.returncode == -signal.SIGTERM and stop is not None and stop.wait(STOP_GRACE):
            raise Cancelled()
        if child.returncode < 0:
            how = f"was ended by {signal.Signals(-child.returncode).name}"
        else:
            how = f"failed (exit {child.returncode}; its traceback is above)"
        raise BridgeError(
            f"{path}: the export's parser {how}; nothing was stored, run the import again"
        )
    finally:
        if child.poll() is None:  # the write failed or was stopped: never leave it behind
            child.kill()
            child.wait()
        child.stdout.close()


def _die_with_parent(parent: int) -> None:
    """Have the kernel end this process when the parent dies (Linux); best effort."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the line above
        os._exit(1)


def _peak_kb() -> int:
    """This process's peak RSS since it began this program (VmHWM; ru_maxrss would count
    the parent's pages it was forked with)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _send(out: IO[bytes], kind: str, body: Any) -> None:
    data = pickle.dumps((kind, body), protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_FRAME.pack(len(data)))
    out.write(data)
    out.flush()


def main() -> None:
    """The child: parse the export named on stdin, send what it holds on stdout."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the parent ends the write
    # The frames get stdout to themselves; anything printed goes to stderr.
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    job = pickle.load(sys.stdin.buffer)
    _die_with_parent(job["parent"])
    from bridge.intake.apple_rows import AppleRows
    from connectors import apple_health

    # The reader uses no part of the context; the person's zone plays no role in a parse.
    now = datetime.now(UTC)
    hook = AppleRows(job["source"], job["stamp"], job["wall_clock"])
    ctx = ReadContext(tz=UTC, now=now, fast_rows=hook)
    batch: list[Any] = []
    try:
        for item in apple_health.read(Path(job["path"]), ctx):
            batch.append(item)
            if len(batch) >= ITEMS_PER_FRAME:
                _send(out, "items", batch)
                batch = []
        _send(out, "items", batch)
        _send(out, "done", _peak_kb())
    except InputError as err:
        with contextlib.suppress(BrokenPipeError):
            _send(out, "error", str(err))
        sys.exit(2)
    except BrokenPipeError:
        os._exit(1)  # the parent stopped reading: it failed or was stopped
    out.close()


if __name__ == "__main__":
    main()
