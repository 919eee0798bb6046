"""`rhythm-bridge person add|list|remove`: the people of a household or study."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from bridge.cli.core import JsonOpt, app, print_json, registry_store

if TYPE_CHECKING:
    from bridge.config import Settings

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
    _remove_files(theirs)
    typer.echo(f"removed {name}: {sum(deleted.values())} rows, {secrets} secrets")


def _remove_files(settings: Settings) -> None:
    """The person's own files: their folder, or for the default person (whose files sit in
    the data dir beside the installation's) each of them by name."""
    import shutil

    from bridge.cycle.classify import local_model_path
    from bridge.learning.adapter import ADAPTER_FILE

    if settings.person_path != settings.data_path:
        shutil.rmtree(settings.person_path, ignore_errors=True)
    for path in (
        settings.export_path,
        settings.person_path / ADAPTER_FILE,
        local_model_path(settings),
    ):
        path.unlink(missing_ok=True)
