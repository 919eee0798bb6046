"""`rhythm-bridge notify-token` and `mqtt-password`: secrets of the outgoing channels."""

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


@app.command("mqtt-password")
def mqtt_password(
    clear: Annotated[bool, typer.Option("--clear", help="Forget the stored password.")] = False,
) -> None:
    """Store the MQTT broker's password (asked for without echo) in the keyring."""
    from bridge.out.mqtt.link import set_password

    settings = current_settings()
    if clear:
        set_password(settings, None)
        typer.echo("mqtt password removed")
        return
    password = typer.prompt("MQTT broker password", hide_input=True)
    set_password(settings, password)
    typer.echo("mqtt password stored in the keyring")
    if not settings.mqtt.username:
        typer.echo('Set the user it belongs to in the config: [mqtt] username = "..."')
