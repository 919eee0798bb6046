"""`rhythm-bridge serve` and `rhythm-bridge web-token`: the page on its own, and its token."""

from __future__ import annotations

from typing import Annotated

import typer

from bridge.cli.core import app, base_settings, current_settings, registry_store


@app.command()
def serve(
    host: Annotated[
        str | None, typer.Option(help="Address to bind (default: [web] host, 127.0.0.1).")
    ] = None,
    port: Annotated[int | None, typer.Option(help="Port (default: [web] port, 8765).")] = None,
) -> None:
    """Serve the web page and its JSON API (no scheduler) until Ctrl-C or SIGTERM.

    In a household the page serves everyone, each signed in with their own web token."""
    from bridge.web.access import is_loopback
    from bridge.web.server import serve as run_server

    settings = base_settings()
    host = settings.web.host if host is None else host
    port = settings.web.port if port is None else port
    shown = f"[{host}]" if ":" in host else host
    typer.echo(f"serving http://{shown}:{port}/ (Ctrl-C stops)")
    if not is_loopback(host):
        typer.echo("other devices sign in with the token that `rhythm-bridge web-token` prints")
    run_server(settings, registry_store(), host, port)


@app.command("web-token")
def web_token(
    rotate: Annotated[
        bool,
        typer.Option("--rotate", help="Replace it; devices must sign in again."),
    ] = False,
    admin: Annotated[
        bool,
        typer.Option(
            "--admin", help="The household admin's token instead: lists the people, reads no data."
        ),
    ] = False,
) -> None:
    """Print the web access token (kept in the keyring; made on first use)."""
    from bridge.auth.access import ensure_access_token, ensure_admin_token

    if admin:
        typer.echo(ensure_admin_token(base_settings(), rotate=rotate))
        return
    typer.echo(ensure_access_token(current_settings(), rotate=rotate))


@app.command("calendar-feed")
def calendar_feed(
    rotate: Annotated[
        bool,
        typer.Option("--rotate", help="Replace the token; the old link stops working."),
    ] = False,
    revoke: Annotated[
        bool,
        typer.Option("--revoke", help="Delete the token; the feed answers 404 until remade."),
    ] = False,
) -> None:
    """Print the link of the .ics feed of accepted and rescheduled suggestions.

    Subscribe to it from Google, Apple or Outlook calendar (by URL). It is served by the
    web server (`serve`, or `run` with [web] enabled); the calendar app must reach it, so
    use [notify] callback_url's address (e.g. through a reverse proxy).
    """
    from bridge.auth.feed import ensure_feed_token, revoke_feed_token

    settings = current_settings()
    if revoke:
        revoke_feed_token(settings)
        typer.echo("calendar feed token deleted; the old link now answers 404")
        return
    token = ensure_feed_token(settings, rotate=rotate)
    base = settings.notify.callback_url.rstrip("/")
    if not base:
        host = settings.web.host
        base = f"http://{f'[{host}]' if ':' in host else host}:{settings.web.port}"
    typer.echo(f"{base}/calendar/{token}.ics")
    note = _unreachable(base)
    if note:
        typer.echo(note, err=True)


def _unreachable(base: str) -> str | None:
    """A word when the link's host is this machine alone: no calendar service can reach it."""
    import ipaddress
    from urllib.parse import urlsplit

    host = urlsplit(base).hostname or ""
    try:
        addr = ipaddress.ip_address(host)
        local = addr.is_loopback or addr.is_unspecified
    except ValueError:
        local = host == "localhost" or host.endswith(".localhost")
    if not local:
        return None
    return (
        f"note: {host} is this machine only; a calendar service (Google, Apple, Outlook) "
        "cannot reach this link. Set [notify] callback_url to an address it can reach "
        "(e.g. https://bridge.example.org through a reverse proxy) and serve the page "
        "([web] enabled = true)"
    )
