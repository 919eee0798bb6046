"""A live records-per-second bar for long imports, shown only on a terminal."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def records_progress(label: str) -> Iterator[Callable[[int], None] | None]:
    """Yield a callback taking the running record count, or None when not on a terminal."""
    if not sys.stdout.isatty():
        yield None
        return
    from rich.progress import Progress, ProgressColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Any) -> Text:
            elapsed = task.elapsed or 0.0
            rate = task.completed / elapsed if elapsed > 0 else 0.0
            return Text(f"{rate:,.0f} records/s", style="progress.data.speed")

    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TextColumn("{task.completed:,.0f} records"),
        Rate(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task(label, total=None)
        try:
            yield lambda count: bar.update(task, completed=count)
        except KeyboardInterrupt:
            # Leave the bar's last line on screen: how far it got is worth seeing.
            bar.live.transient = False
            raise
