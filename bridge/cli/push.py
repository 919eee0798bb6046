"""`rhythm-bridge push-token create|list|revoke`: the tokens phones push Apple data with."""

from __future__ import annotations

from typing import Annotated

import typer

from bridge.cli.core import JsonOpt, app, current_settings, print_json

push_app = typer.Typer(
    help="Device tokens for pushes from Health Auto Export or a Shortcut ([push] in the config).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(push_app, name="push-token")

Name = Annotated[str, typer.Argument(help="The device's name, e.g. jane-iphone.")]


@push_app.command("create")
def create(
    name: Name,
    replace: Annotated[
        bool, typer.Option("--replace", help="Give a device that has a token a new one.")
    ] = False,
) -> None:
    """Make a device's token and print it once (the last line); only a digest is kept."""
    from bridge.intake.push import create_token

    token = create_token(current_settings(), name, replace=replace)
    typer.echo(
        f"push token for {name} (shown once; set it in the app as the header "
        "Authorization: Bearer <token>):",
        err=True,
    )
    typer.echo(token)


@push_app.command("list")
def list_(as_json: JsonOpt = False) -> None:
    """The devices that have a token (never the tokens)."""
    from bridge.intake.push import list_tokens

    tokens = list_tokens(current_settings())
    if as_json:
        print_json(tokens)
        return
    if not tokens:
        typer.echo("no push tokens; create one with: rhythm-bridge push-token create NAME")
    for entry in tokens:
        typer.echo(f"{entry['device']:<24} created {entry['created'][:19]}")


@push_app.command("revoke")
def revoke(name: Name) -> None:
    """Revoke a device's token: its next push is refused (401)."""
    from bridge.errors import InputError
    from bridge.intake.push import revoke_token

    if not revoke_token(current_settings(), name):
        raise InputError(f"no push token for {name!r}; see rhythm-bridge push-token list")
    typer.echo(f"push token for {name} revoked")
