"""Operating the daemon: the systemd unit and backups."""

from __future__ import annotations

import os
import shutil
import sys
from importlib.resources import files
from pathlib import Path
from typing import Annotated

import typer

from bridge.cli.core import app, file_in, registry_store, state
from bridge.errors import BridgeError, ConfigError

UNIT_PATH = Path("/etc/systemd/system/rhythm-bridge.service")
# The one set of service paths: the unit, the steps below, the README, docs/guides/service.md,
# the example config and bridge/auth/secrets.py name these (tests/cli/test_first_hour.py).
CONFIG_DIR = "/etc/rhythm-bridge"
CONFIG_FILE = f"{CONFIG_DIR}/config.toml"
KEY_FILE = f"{CONFIG_DIR}/keyring.key"
DATA_DIR = "/var/lib/rhythm-bridge"


def render_unit(exec_start: str, user: str) -> str:
    template = files("bridge.daemon").joinpath("rhythm-bridge.service").read_text()
    return template.format(
        exec_start=exec_start, user=user, config_file=CONFIG_FILE, key_file=KEY_FILE
    )


def service_steps(exe: str, user: str) -> list[str]:
    """What to run after the unit is written, in order, as `install-service` prints it.

    The daemon runs as `user` and reads its config itself, so the folder and the config
    are the group's to read (root owns them: the daemon cannot change its own config).
    The key stays root's alone: systemd reads it and hands it over as a credential.
    """
    return [
        f"sudo useradd --system --home-dir {DATA_DIR} --shell /usr/sbin/nologin {user}",
        f"sudo {exe} --config {CONFIG_FILE} init",
        f"sudo install -d -m 0750 -o root -g {user} {CONFIG_DIR}",
        f"sudo chgrp {user} {CONFIG_FILE} && sudo chmod 0640 {CONFIG_FILE}",
        f"sudoedit {CONFIG_FILE}",
        f"sudo sh -c 'umask 077; head -c 32 /dev/urandom | base64 > {KEY_FILE}'",
        "sudo systemctl daemon-reload && sudo systemctl enable --now rhythm-bridge",
        "journalctl -u rhythm-bridge -f",
    ]


@app.command("install-service")
def install_service(
    user: Annotated[
        str, typer.Option(help="The dedicated system user to run as.")
    ] = "rhythm-bridge",
    path: Annotated[Path, typer.Option(help="Where to write the unit.")] = UNIT_PATH,
    print_only: Annotated[bool, typer.Option("--print", help="Print the unit instead.")] = False,
) -> None:
    """Write the systemd unit (Type=notify, watchdog, hardening) and say what to run next.

    The unit runs the rhythm-bridge this command is (install it for real first: a venv
    under /opt, see docs/guides/service.md), with its config in /etc/rhythm-bridge.
    """
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
    steps = "\n".join(f"  {step}" for step in service_steps(exe, user))
    typer.echo(
        f"wrote {path} (it runs {exe} run as {user})\nnext:\n{steps}\n"
        f"keep a copy of {KEY_FILE}: without it the stored tokens cannot be read"
    )
    if _from_a_checkout(exe):
        typer.echo(
            f"note: {exe} looks like a checkout's or a home folder's; the service user may "
            "not reach it, and a `git pull` changes the running service. Install it for "
            "real (a venv under /opt: docs/guides/service.md) and run install-service again",
            err=True,
        )


def _from_a_checkout(exe: str) -> bool:
    parts = Path(exe).parts
    return ".venv" in parts or parts[1:2] in (("home",), ("root",))


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
    """Write a consistent backup of the store, safe while the daemon runs.

    The store is the household's: a backup holds every person's data."""
    from datetime import datetime

    from bridge.out.backup import backup as make_backup

    store = registry_store()
    people = store.people()
    if state.get("person") and len(people) > 1:
        # A person asking for "their" backup would get everyone's rows.
        raise ConfigError(
            f"backup copies the whole store, every person's data ({', '.join(people)}); "
            "run it without --person, as whoever looks after the household's server"
        )
    suffix = ".db" if store.is_sqlite else ".dump"
    name = f"rhythm-bridge-{datetime.now():%Y%m%d-%H%M%S}{suffix}"
    dest = file_in(file, name)
    try:
        path = make_backup(store, dest)
    except OSError as err:
        reason = err.strerror or err
        raise BridgeError(f"{dest}: cannot write the backup there ({reason})") from None
    typer.echo(f"wrote {path} ({path.stat().st_size} bytes)")
