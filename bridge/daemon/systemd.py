"""systemd integration: the unit template (beside this file) and the notification protocol.

READY, WATCHDOG and STOPPING, stdlib only.

A datagram to the socket named by $NOTIFY_SOCKET; a no-op when it is unset, so the
daemon runs the same under systemd, in a terminal and in tests.
"""

from __future__ import annotations

import os
import socket


def sd_notify(state: str) -> bool:
    """Send one state string (e.g. "READY=1"); True when systemd was told."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):  # abstract namespace
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall(state.encode())
        return True
    except OSError:
        return False


def watchdog_interval() -> float | None:
    """Seconds between WATCHDOG=1 pings: half of WatchdogSec, as systemd recommends."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        return max(1.0, int(usec) / 1e6 / 2)
    except ValueError:
        return None
