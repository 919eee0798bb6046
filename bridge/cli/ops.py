"""Operating the daemon: the systemd unit and backups."""

from __future__ import annotations

import os
import shutil
import sys
from importlib.resources import files
from pathlib import Path
from typing import Annotated

import typer

from bridge.cli.core import app, current_store, file_in
from bridge.errors import BridgeError

UNIT_PATH = Path("/etc/systemd/system/rhythm-bridge.service")


def render_unit(exec_start: str, user: str) -> str:
    template = files("bridge.daemon").joinpath("rhythm-bridge.service").read_text()
    return template.format(exec_start=exec_start, user=user)


@app.command("install-service")
def install_service(
    user: Annotated[
        str, typer.Option(help="The dedicated system user to run as.")
    ] = "rhythm-bridge",
    path: Annotated[Path, typer.Option(help="Where to write the unit.")] = UNIT_PATH,
    print_only: Annotated[bool, typer.Option("--print", help="Print the unit instead.")] = False,
) -> None:
    """Write the systemd unit (Type=notify, watchdog, hardening) and say what to run next."""
    exe = shutil.which("rhythm-bridge") or str(Path(sys.argv[0]).resolve())
    unit = render_unit(exe, user)
    if print_only:
        typer.echo(unit, nl=False)
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(unit)
        os.chmod(path, 0o644)
    except PermissionError:
        raise BridgeError(f"{path}: permission denied; run with sudo, or use --print") from None
    typer.echo(
        f"wrote {path}\nnext:\n"
        f"  sudo useradd --system --home-dir /var/lib/rhythm-bridge "
        f"--shell /usr/sbin/nologin {user}\n"
        "  sudo install -d -m 0700 /etc/rhythm-bridge && sudo cp config.toml /etc/rhythm-bridge/\n"
        "  sudo sh -c 'head -c 32 /dev/urandom | base64 > /etc/rhythm-bridge/keyring.key'\n"
        "  sudo chmod 0600 /etc/rhythm-bridge/keyring.key\n"
        "  sudo systemctl daemon-reload && sudo systemctl enable --now rhythm-bridge\n"
        "  journalctl -u rhythm-bridge -f"
    )


@app.command()
def backup(
    file: Annotated[
        Path,
        typer.Argument(
            help="Where to write the backup: a file, or a folder (then "
            "rhythm-bridge-YYYYMMDD-HHMMSS.db in it; .dump on PostgreSQL)."
        ),
    ],
) -> None:
    """Write a consistent backup of the store, safe while the daemon runs."""
    from datetime import datetime

    from bridge.out.backup import backup as make_backup

    store = current_store()
    suffix = ".db" if store.is_sqlite else ".dump"
    name = f"rhythm-bridge-{datetime.now():%Y%m%d-%H%M%S}{suffix}"
    path = make_backup(store, file_in(file, name))
    typer.echo(f"wrote {path} ({path.stat().st_size} bytes)")
