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


@contextmanager
def slots_progress(label: str, *, at_least: int = 400) -> Iterator[Callable[[int, int], None]]:
    """Yield a `(done, total)` callback drawing a bar once a run has `at_least` slots to do,
    only on a terminal (a backfill of years; a routine cycle draws nothing)."""
    bar: Any = None
    task: Any = None

    def step(done: int, total: int) -> None:
        nonlocal bar, task
        if total < at_least or not sys.stdout.isatty():
            return
        if bar is None:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                transient=True,
            )
            bar.start()
            task = bar.add_task(label, total=total)
        bar.update(task, completed=done)

    try:
        yield step
    finally:
        if bar is not None:
            bar.stop()
