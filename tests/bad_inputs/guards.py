"""What every bad-input case runs under: a memory bound and a hang guard (files and APIs)."""

from __future__ import annotations

import signal
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager

# Python-level allocation peak per case; exports stream through in 1 MiB chunks and API
# answers are capped at connectors.http.MAX_RESPONSE_BYTES.
MEMORY_BOUND = 150 * 2**20
# A hang guard, not a timing assertion: a case still running after this has hung.
HANG_SECONDS = 120


@contextmanager
def hang_guard(seconds: int = HANG_SECONDS) -> Iterator[None]:
    def fail(_signum, _frame):
        raise TimeoutError(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@contextmanager
def bounded(memory: int = MEMORY_BOUND, seconds: int = HANG_SECONDS) -> Iterator[None]:
    """Run the block under the hang guard; fail if its allocation peak passed `memory`."""
    tracemalloc.start()
    try:
        with hang_guard(seconds):
            yield
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < memory, f"peak {peak / 2**20:.0f} MiB"
