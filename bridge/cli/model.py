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
    # bridge.sim.train.DEFAULT_PEOPLE, not imported here so that --help stays fast
    people: Annotated[int, typer.Option(min=10, help="Simulated training people.")] = 6000,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write the artifact here (default: the bundled model)."),
    ] = None,
    families: Annotated[
        str,
        typer.Option(
            "--families", help="Simulator families to mix, comma-separated (default: all)."
        ),
    ] = "rhythm,fatigue,habits,shifts",
    as_json: JsonOpt = False,
) -> None:
    """Train the bundled model on simulated people (reproducible for a given seed)."""
    from dataclasses import asdict

    from bridge.runner.bundled import default_model_path
    from bridge.sim.train import train

    names = _families(families, "--families")
    report = train(out or default_model_path(), seed=seed, n_people=people, families=names)
    if as_json:
        print_json(asdict(report))
        return
    typer.echo(
        f"trained on {report.people} simulated people of {', '.join(names)} "
        f"({report.samples} interactions, "
        f"seed {report.seed}) in {report.seconds:.0f}s: accept log-loss "
        f"{report.accept_log_loss:.3f}, meter-change RMSE {report.delta_rmse:.4f}, "
        f"meter evidence weight {report.meta.get('delta_weight', 'default')}; "
        f"wrote {report.path} ({report.size_bytes / 1024:.0f} KiB)"
    )


@app.command("train-transfer")
def train_transfer_cmd(
    seed: Annotated[int, typer.Option(help="Seed of the randomized training population.")] = 0,
    # bridge.sim.prior_people's default, not imported here so that --help stays fast
    people: Annotated[int, typer.Option(min=5, help="Randomized training people.")] = 400,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write the artifact here (default: the shipped one)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Fit the transfer runner's population prior on procedurally randomized people."""
    from bridge.runner.transfer import default_model_path
    from bridge.sim.prior_people import train_transfer

    report = train_transfer(out or default_model_path(), seed=seed, n_people=people)
    if as_json:
        print_json(
            {
                "path": str(report.path),
                "samples": report.samples,
                "accept_log_loss": report.accept_log_loss,
                "size_bytes": report.size_bytes,
                "meta": report.meta,
            }
        )
        return
    typer.echo(
        f"fitted on {people} randomized people ({report.samples} answers, seed {seed}): "
        f"accept log-loss {report.accept_log_loss:.3f}; wrote {report.path} "
        f"({report.size_bytes / 1024:.0f} KiB)"
    )


def _families(text: str, option: str) -> tuple[str, ...]:
    from bridge.sim.families import NAMES

    names = tuple(x.strip() for x in text.split(",") if x.strip())
    unknown = [x for x in names if x not in NAMES]
    if unknown or not names:
        raise InputError(f"{option} {text!r}: use names from {', '.join(NAMES)}")
    return names


def _lofo(
    families: str,
    *,
    people: int,
    seed: int,
    train_people: int,
    slots: int,
    as_json: bool,
    plot: Path | None,
) -> None:
    from bridge.sim.lofo import FoldBudget, format_lofo, lofo

    names = _families(families, "--families")
    if len(names) < 2:
        raise InputError(f"--families {families!r}: leaving one out needs at least two")
    report = lofo(
        names,
        n_people=people,
        seed=seed,
        slots=slots,
        budget=FoldBudget(train_people=train_people),
        progress=None if as_json else lambda n: typer.echo(n + "…", err=True),
    )
    if plot is not None:
        from bridge.sim.plot import write_lofo_plot

        write_lofo_plot(report, plot)
    if as_json:
        print_json(report)
        return
    typer.echo(format_lofo(report))


@app.command("eval")
def eval_(
    *,
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
    lofo: Annotated[
        bool,
        typer.Option(
            "--lofo",
            help="Leave one family out: per family, train on the others and evaluate on it "
            "(in and ood, --people per family).",
        ),
    ] = False,
    families: Annotated[
        str, typer.Option("--families", help="With --lofo: the families, comma-separated.")
    ] = "rhythm,fatigue,habits,shifts",
    train_people: Annotated[
        int, typer.Option("--train-people", min=10, help="With --lofo: training people per fold.")
    ] = 600,
    slots: Annotated[
        int, typer.Option("--slots", min=8, help="Interactions per person (default 112).")
    ] = 112,
    heartsteps: Annotated[
        Path | None,
        typer.Option(
            "--heartsteps",
            help="Replay the HeartSteps V1 trial's real answers from this folder "
            "(suggestions.csv); e.g. ../shared/datasets/heartsteps.",
        ),
    ] = None,
    coding: Annotated[
        str,
        typer.Option(
            "--coding",
            help="With --heartsteps: ignore (no answer counts as Ignore) or rated (good vs bad).",
        ),
    ] = "ignore",
    as_json: JsonOpt = False,
) -> None:
    """Run random, heuristic, bundled, no-prior, linear-ts and oracle over the same people."""
    from bridge.sim.evaluate import ADAPTED, BLIND, RUNNERS, Lineup, evaluate, format_table
    from bridge.sim.families import NAMES

    if heartsteps is not None:
        _heartsteps(heartsteps, coding, as_json=as_json)
        return
    if split not in ("in", "ood"):
        raise InputError(f"--split {split!r}: use 'in' or 'ood'")
    if lofo:
        _lofo(
            families,
            people=people,
            seed=seed,
            train_people=train_people,
            slots=slots,
            as_json=as_json,
            plot=plot,
        )
        return
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
        lineup=Lineup(
            (*RUNNERS, *((ADAPTED,) if adapter else ()), *((BLIND,) if calendars else ()))
        ),
        progress=None if as_json else lambda n: typer.echo(f"running {n}…", err=True),
        calendars=calendars,
        family=family,
        slots=slots,
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


def _heartsteps(directory: Path, coding: str, *, as_json: bool) -> None:
    from bridge.sim.heartsteps import evaluate, format_report, load

    report = evaluate(load(directory, coding))
    if as_json:
        print_json(report)
        return
    typer.echo(format_report(report))
