"""`rhythm-bridge notify-token`: keep the ntfy server's token in the keyring."""

from __future__ import annotations

from typing import Annotated

import typer

from bridge.cli.core import app, current_settings


@app.command("notify-token")
def notify_token(
    clear: Annotated[bool, typer.Option("--clear", help="Forget the stored token.")] = False,
) -> None:
    """Store the ntfy access token (asked for without echo) in the keyring."""
    from bridge.out.notify import set_ntfy_token

    if clear:
        set_ntfy_token(current_settings(), None)
        typer.echo("ntfy token removed")
        return
    token = typer.prompt("ntfy access token", hide_input=True).strip()
    set_ntfy_token(current_settings(), token)
    typer.echo("ntfy token stored in the keyring")
