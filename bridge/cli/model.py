"""Commands for the bundled model: train it on simulated people, evaluate every runner."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bridge.cli.core import JsonOpt, app, print_json
from bridge.errors import InputError


@app.command("train-model")
def train_model(
    seed: Annotated[int, typer.Option(help="Seed of the simulated training population.")] = 0,
    people: Annotated[int, typer.Option(min=10, help="Simulated training people.")] = 1500,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write the artifact here (default: the bundled model)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Train the bundled model on simulated people (reproducible for a given seed)."""
    from dataclasses import asdict

    from bridge.runner.bundled import default_model_path
    from bridge.sim.train import train

    report = train(out or default_model_path(), seed=seed, n_people=people)
    if as_json:
        print_json(asdict(report))
        return
    typer.echo(
        f"trained on {report.people} simulated people ({report.samples} interactions, "
        f"seed {report.seed}) in {report.seconds:.0f}s: accept log-loss "
        f"{report.accept_log_loss:.3f}, meter-change RMSE {report.delta_rmse:.4f}; "
        f"wrote {report.path} ({report.size_bytes / 1024:.0f} KiB)"
    )


@app.command("eval")
def eval_(
    split: Annotated[str, typer.Option(help="in (held-out, in-distribution) or ood.")] = "in",
    people: Annotated[int, typer.Option(min=1, help="Simulated people per runner.")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of the evaluation people.")] = 0,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write the acceptance curves as SVG here.")
    ] = None,
    adapter: Annotated[
        bool,
        typer.Option(
            "--adapter", help="Also run bundled with a Phase 3 adapter fitted on a prior month."
        ),
    ] = False,
    calendars: Annotated[
        bool,
        typer.Option(
            "--calendars",
            help="Give every person a simulated calendar; report recommendations over busy "
            "time, bundled's acceptance with vs without calendars, and bundled-blind "
            "(the same model not reading how booked a slot is).",
        ),
    ] = False,
    family: Annotated[
        str,
        typer.Option(
            "--family", help="Simulated people: rhythm (default), fatigue, habits or shifts."
        ),
    ] = "rhythm",
    as_json: JsonOpt = False,
) -> None:
    """Run random, heuristic, bundled, no-prior, linear-ts and oracle over the same people."""
    from bridge.sim.evaluate import ADAPTED, BLIND, RUNNERS, evaluate, format_table
    from bridge.sim.families import NAMES

    if split not in ("in", "ood"):
        raise InputError(f"--split {split!r}: use 'in' or 'ood'")
    if family not in NAMES:
        raise InputError(f"--family {family!r}: use one of {', '.join(NAMES)}")
    if adapter and family != "rhythm":
        raise InputError(
            f"--adapter with --family {family}: the adapter needs the same person's earlier "
            "month, which only the rhythm family can replay; leave out --adapter"
        )
    report = evaluate(
        split,
        people,
        seed,
        runners=(*RUNNERS, *((ADAPTED,) if adapter else ()), *((BLIND,) if calendars else ())),
        progress=None if as_json else lambda n: typer.echo(f"running {n}…", err=True),
        calendars=calendars,
        family=family,
    )
    if plot is not None:
        from bridge.sim.plot import write_plot

        write_plot(report, plot)
    if as_json:
        print_json(report)
        return
    typer.echo(format_table(report))
    if plot is not None:
        typer.echo(f"wrote {plot}")
