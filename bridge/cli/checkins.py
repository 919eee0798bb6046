"""Check-ins: `checkin` (how you feel now) and `import checkins` (a history from a CSV)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from bridge.cli.core import JsonOpt, app, current_settings, current_store, print_json
from mappings.checkins import ITEMS, SCALE
from mappings.slots import SLOT_NAMES


@app.command()
def checkin(
    answers: Annotated[
        list[str],
        typer.Argument(
            help=f"item=value, {SCALE[0]}-{SCALE[1]} each, any of: "
            + ", ".join(i.name for i in ITEMS)
            + " (stress: higher = more stressed)."
        ),
    ],
    as_json: JsonOpt = False,
) -> None:
    """Say how you feel now (e.g. energy=4 stress=2); a second answer in a slot replaces it."""
    from bridge.intake.checkins import parse_answers, record_checkins

    settings = current_settings()
    parsed = parse_answers(answers)
    rows = record_checkins(
        current_store(), parsed, datetime.now(UTC), settings.tz, settings.boundaries
    )
    if as_json:
        print_json(rows)
        return
    first = rows[0]
    said = ", ".join(f"{r['item']} {r['value']:g}" for r in rows)
    typer.echo(
        f"noted for {first['local_date']} {SLOT_NAMES[first['slot']]}: {said} "
        "(the meters are measured against these: rhythm-bridge validity)"
    )


def import_checkins_command(path: Path) -> None:
    from bridge.intake.checkins import import_checkins

    settings = current_settings()
    summary = import_checkins(current_store(), path, settings.tz, settings.boundaries)
    typer.echo(summary.line())


@app.command()
def validity(
    fit: Annotated[
        bool,
        typer.Option(
            "--fit",
            help="First fit your meter weights to your check-ins; keep them only where a "
            "forward-in-time check says they track your check-ins better.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """How closely each meter follows your check-ins (rho, 95 % interval, days)."""
    from bridge.cycle.validity import fit_person, paired_history, report

    store, settings = current_store(), current_settings()
    if fit:
        verdicts = fit_person(store, settings, datetime.now(settings.tz).date())
        for meter, v in verdicts.items():
            if "why" in v:
                line = f"{meter}: bundled weights ({v['why']})"
            else:
                which = "fitted weights" if v["used"] else "bundled weights"
                line = (
                    f"{meter}: {which} (forward rho fitted {v['forward_rho_fitted']}, bundled "
                    f"{v['forward_rho_bundled']}, over {v['judged_days']} days)"
                )
            typer.echo(line, err=as_json)
        typer.echo("the next cycle recomputes the meters with them (run --once)", err=as_json)
    doc = report(paired_history(store, settings))
    if as_json:
        print_json(doc)
        return
    if not doc["meters"]:
        typer.echo(
            "no check-ins yet: say how you feel with `rhythm-bridge checkin energy=4 "
            "stress=2` (or import a history: rhythm-bridge import checkins FILE.csv)"
        )
        return
    for meter in doc["meters"]:
        if meter["weights"] != "bundled":
            typer.echo(f"{meter['meter'].title()} is made with weights {meter['weights']}.")
        for entry in meter["items"]:
            typer.echo(entry["sentence"])
