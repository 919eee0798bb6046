"""The C heap of a long-running process: what glibc keeps after Python frees it.

The daemon runs a cycle on a scheduler thread and a worker runs jobs on a pool of
threads; glibc gives each thread an arena of its own and keeps what is freed there. These
settings give it back (and are a no-op on other C libraries: musl, macOS).
"""

from __future__ import annotations

import os
from typing import Any

# glibc's mallopt parameters. M_MMAP_THRESHOLD: blocks from this size up get their own
# mapping, given back to the OS when freed (glibc otherwise raises the threshold after
# the first big free).
_M_MMAP_THRESHOLD, _MMAP_FROM = -3, 128 * 1024
_M_ARENA_MAX = -8
_libc: Any = None


def _glibc() -> Any:
    """The C library when it is glibc, else None (musl, macOS: nothing to tune)."""
    global _libc
    if _libc is None:
        import ctypes
        import ctypes.util

        try:
            lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _libc = lib if hasattr(lib, "malloc_trim") and hasattr(lib, "mallopt") else False
        except OSError:
            _libc = False
    return _libc or None


def tune_heap() -> None:
    """Keep the frames of a cycle (numpy blocks of 100 KB to a few MB) out of the heap.

    Measured with benchmarks/soak.py: RSS grew 10 MB in 9 simulated days with the trim
    below alone and 6 MB with this too, at the same cycle time.
    """
    libc = _glibc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_FROM)


def trim_heap() -> None:
    """Give the heap freed by a cycle back to the OS (glibc's malloc_trim; else nothing).

    A cycle parses files and answers and drops them on whichever scheduler thread runs
    it; glibc keeps what they freed in per-thread arenas, so over weeks RSS can creep up
    without any object being alive. (The meter step's pandas frames, which did that by
    tens of MB in benchmarks/soak.py, now live and die in a child process.)
    """
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def fewer_arenas(arenas: int = 2) -> bool:
    """Cap glibc's malloc arenas for this process; call it before its threads start.

    glibc allows up to 8 arenas per core, and memory freed in one is not reused by the
    others: a worker whose job threads each parse provider answers grew by about 40 MB
    that way at 1,000 people (benchmarks/many_people.py: 177-198 MB per worker against
    141-146 MB with two arenas, in runs of the same length). MALLOC_ARENA_MAX in the
    environment says the same and wins."""
    libc = _glibc()
    if libc is None or os.environ.get("MALLOC_ARENA_MAX"):
        return False
    return bool(libc.mallopt(_M_ARENA_MAX, arenas))
