"""`rhythm-bridge person add|list|remove`: the people of a household or study."""

from __future__ import annotations

from typing import Annotated

import typer

from bridge.cli.core import JsonOpt, app, print_json, registry_store

person_app = typer.Typer(
    help="The people this installation keeps data for (a household, a coach's team).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(person_app, name="person")

Name = Annotated[str, typer.Argument(help="The person's name: lowercase letters, digits, - or _.")]


@person_app.command("add")
def add(name: Name) -> None:
    """Register a person; their sources go into [people.NAME] in the config."""
    from bridge.errors import InputError

    if not registry_store().add_person(name):
        raise InputError(f"{name} is already here; see rhythm-bridge person list")
    typer.echo(
        f"added {name}; give them sources in [people.{name}.sources.*] of the config, then "
        f"`rhythm-bridge --person {name} auth SOURCE` and `--person {name} web-token`"
    )


@person_app.command("list")
def list_(as_json: JsonOpt = False) -> None:
    """The people here (names only: nobody's data)."""
    people = registry_store().people()
    if as_json:
        print_json(people)
        return
    for name in people:
        typer.echo(name)


@person_app.command("remove")
def remove(
    name: Name,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a person: all their data (one transaction), their secrets and snapshot."""
    from bridge.auth.secrets import Secrets
    from bridge.cli.core import base_settings
    from bridge.errors import InputError

    store = registry_store()
    if name not in store.people():
        raise InputError(f"no person {name!r} here; see rhythm-bridge person list")
    if not yes and not typer.confirm(
        f"Delete all of {name}'s data and secrets? This cannot be undone", default=False
    ):
        raise typer.Exit(1)
    deleted = store.remove_person(name)
    theirs = base_settings().for_person(name)
    secrets = Secrets.from_settings(theirs).forget_all()
    theirs.export_path.unlink(missing_ok=True)
    typer.echo(f"removed {name}: {sum(deleted.values())} rows, {secrets} secrets")
