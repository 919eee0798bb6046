"""`rhythm-bridge auth google|google-write|whoop|garmin`, `auth status`, `auth revoke SOURCE`."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Annotated

import typer

from bridge.cli.core import JsonOpt, app, current_settings, current_store, print_json
from connectors.registry import auth_choices, spelled

auth_app = typer.Typer(
    help="Connect a live source once (works over SSH), show or revoke stored access.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(auth_app, name="auth")

ModeOpt = Annotated[
    str,
    typer.Option(
        "--mode",
        help="paste: print the URL and paste the redirected address back (works over SSH); "
        "loopback: listen on localhost for the browser; auto: loopback on a desktop, "
        "paste over SSH or without a display.",
    ),
]


NoBrowserOpt = Annotated[
    bool, typer.Option("--no-browser", help="Loopback mode: print the URL, do not open it.")
]
ClientSecretsOpt = Annotated[
    str | None,
    typer.Option("--client-secrets", help="OAuth client JSON (default: from the config)."),
]


def _prompter():  # -> Prompter (imported lazily to keep --help fast)
    from bridge.intake.connect import Prompter

    return Prompter(
        say=typer.echo,
        ask=lambda text: typer.prompt(text),
        ask_secret=lambda text: typer.prompt(text, hide_input=True),
    )


def _loopback(mode: str) -> bool:
    if mode not in ("auto", "paste", "loopback"):
        raise typer.BadParameter("use auto, paste or loopback", param_hint="--mode")
    if mode != "auto":
        return mode == "loopback"
    headless = bool(os.environ.get("SSH_CONNECTION")) or not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    )
    return not headless


def _done(section: str, message: str) -> None:
    from bridge.intake.sources import mark_authorized

    mark_authorized(current_store(), section)
    typer.echo(message)
    settings = current_settings()
    if not getattr(settings.sources, section).enabled:
        typer.echo(f"Enable it in the config: [sources.{section}] enabled = true")
    typer.echo(f"Pull now with: rhythm-bridge sync {section}")


@auth_app.command("google")
def google(
    mode: ModeOpt = "auto",
    no_browser: NoBrowserOpt = False,
    client_secrets: ClientSecretsOpt = None,
    tasks: Annotated[
        bool | None,
        typer.Option(
            "--tasks/--no-tasks",
            help="Also read Google Tasks (read-only; feeds the Progress meter). Default: "
            "yes when [sources.google_tasks] is enabled.",
        ),
    ] = None,
) -> None:
    """Connect Google Calendar (read-only), and Google Tasks with --tasks, with your own
    OAuth client."""
    from bridge.auth.secrets import Secrets
    from bridge.intake.connect import authorize_google

    settings = current_settings()
    with_tasks = settings.sources.google_tasks.enabled if tasks is None else tasks
    message = authorize_google(
        settings,
        Secrets.from_settings(settings),
        _prompter(),
        loopback=_loopback(mode),
        open_browser=not no_browser,
        client_secrets_file=client_secrets,
        tasks=with_tasks,
    )
    _done("google_calendar", message)
    if with_tasks:
        from bridge.intake.sources import mark_authorized

        mark_authorized(current_store(), "google_tasks")
        if not settings.sources.google_tasks.enabled:
            typer.echo("Enable Tasks in the config: [sources.google_tasks] enabled = true")


# `AuthExpired` and `status` name sources by their config section.
auth_app.command("google_calendar", hidden=True)(google)


@auth_app.command("google-write")
def google_write(
    mode: ModeOpt = "auto",
    no_browser: NoBrowserOpt = False,
    client_secrets: ClientSecretsOpt = None,
    revoke: Annotated[
        bool,
        typer.Option("--revoke", help="Withdraw the write permission and delete its token."),
    ] = False,
) -> None:
    """Allow (or with --revoke, withdraw) writing your accepted suggestions into a Google
    calendar: a consent of its own for the events scope; the sync stays read-only."""
    from bridge.auth.secrets import Secrets

    settings = current_settings()
    secrets = Secrets.from_settings(settings)
    if revoke:
        import httpx

        from bridge.intake.connect import revoke_google_write

        with httpx.Client(timeout=settings.http.timeout_seconds) as client:
            typer.echo(f"google_write: {revoke_google_write(settings, secrets, client)}")
        return
    from bridge.intake.connect import authorize_google_write

    typer.echo(
        authorize_google_write(
            settings,
            secrets,
            _prompter(),
            loopback=_loopback(mode),
            open_browser=not no_browser,
            client_secrets_file=client_secrets,
        )
    )


@auth_app.command("whoop")
def whoop(mode: ModeOpt = "auto") -> None:
    """Connect WHOOP (OAuth with the offline scope; paste the https redirect back)."""
    from bridge.auth.secrets import Secrets
    from bridge.intake.connect import authorize_whoop

    settings = current_settings()
    message = authorize_whoop(
        settings, Secrets.from_settings(settings), _prompter(), loopback=_loopback(mode)
    )
    _done("whoop", message)


@auth_app.command("garmin")
def garmin() -> None:
    """Connect Garmin with a Personal API key created in Garmin Connect web."""
    from bridge.auth.secrets import Secrets
    from bridge.intake.connect import authorize_garmin

    settings = current_settings()
    message = authorize_garmin(settings, Secrets.from_settings(settings), _prompter())
    _done("garmin", message)


@auth_app.command("status")
def status(as_json: JsonOpt = False) -> None:
    """Which sources have stored credentials, when tokens expire, and sync status."""
    from bridge.auth.secrets import Secrets
    from bridge.intake.connect import auth_status

    settings = current_settings()
    doc = auth_status(settings, Secrets.from_settings(settings), current_store())
    if as_json:
        print_json(doc)
        return
    typer.echo(f"keyring: {doc['keyring']}")
    for row in doc["sources"]:
        stored = "credentials stored" if row["credentials_stored"] else "not connected"
        expires = row["access_token_expires"]
        line = f"  {row['source']:<16}{stored:<20}sync {row['sync_status']}"
        if expires:
            line += f"; access token expires {expires}"
        if not row["credentials_stored"] or row["sync_status"] == "reauth_required":
            line += f"\n{'':18}run `{row['command']}`"
        typer.echo(line)
    write = doc["google_write"]
    if write["enabled"] or write["consent_stored"]:
        state = "consent stored" if write["consent_stored"] else "no consent"
        line = f"  {'google_write':<16}{state:<20}{'on' if write['enabled'] else 'off'}"
        line += f", calendar {write['calendar']!r}"
        if write["enabled"] and not write["consent_stored"]:
            line += f"\n{'':18}run `{write['command']}`"
        typer.echo(line)


@auth_app.command("revoke")
def revoke(
    source: Annotated[str, typer.Argument(help=spelled(auth_choices()))],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Revoke a source's access at the provider and delete its stored secrets."""
    import httpx

    from bridge.auth.secrets import Secrets
    from bridge.intake.connect import revoke as do_revoke
    from bridge.intake.connect import source_name
    from bridge.intake.sources import mark_revoked

    section = source_name(source)
    if not yes:
        typer.confirm(f"Revoke {section} and delete its stored secrets?", abort=True)
    settings = current_settings()
    with httpx.Client(timeout=settings.http.timeout_seconds) as client:
        message = do_revoke(settings, Secrets.from_settings(settings), section, client)
    mark_revoked(current_store(), section, datetime.now(UTC))
    typer.echo(f"{section}: {message}")
