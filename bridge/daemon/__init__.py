"""The long-running face: the scheduler that runs cycles, systemd notifications, the unit file."""

import sys

# httpx imports its command-line client whenever click, rich and pygments are installed
# (typer brings them): about 5 MB and 100 modules that a daemon would keep for its whole
# life and never use. Marked missing here, before anything imports httpx in this process,
# httpx takes the branch it has for an install without them (benchmarks/idle_rss.py).
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
