"""`rhythm-bridge train-classifier`: rebuild the learned layer of the event classifier."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bridge.cli.core import app, current_settings, current_store


@app.command("train-classifier")
def train_classifier(
    bundled: Annotated[
        bool,
        typer.Option(
            "--bundled",
            help="Rebuild the model shipped in the package from the shipped training set only.",
        ),
    ] = False,
    training_set: Annotated[
        Path | None,
        typer.Option(help="A title<TAB>ACTION file to train on (default: the shipped one)."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Write the model here (default: the data dir).")
    ] = None,
) -> None:
    """Train the classifier model on the labelled set plus your corrections."""
    from importlib.resources import files

    from bridge.cycle.classify import retrain
    from mappings.classifier_model import BUNDLED

    if bundled:
        # Deterministic: the same training set always gives the same model file contents.
        target = out or Path(str(files("mappings").joinpath(BUNDLED)))
        report = retrain(None, None, out=target, training_set=training_set)
    else:
        report = retrain(current_settings(), current_store(), out=out, training_set=training_set)
    typer.echo(
        f"trained on {report.examples} titles + {report.corrections} corrections "
        f"({report.labels} labels) -> {report.path}"
    )
