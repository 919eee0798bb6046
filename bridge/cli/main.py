"""`rhythm-bridge`: the typer app with every command module registered on it."""

from __future__ import annotations

# Each command module registers its commands on `app` when imported (one line each).
import bridge.cli.auth
import bridge.cli.checkins
import bridge.cli.classifier
import bridge.cli.model
import bridge.cli.notify
import bridge.cli.ops
import bridge.cli.people
import bridge.cli.pipeline
import bridge.cli.push
import bridge.cli.web  # noqa: F401
from bridge.cli.core import app

__all__ = ["app", "main"]


def main() -> None:
    import os

    from bridge.files import UMASK

    # Whatever the login shell's umask: what libraries create by themselves (SQLite's
    # journals, numpy's archives) must be as private as the files we open ourselves.
    os.umask(UMASK)
    app()


if __name__ == "__main__":
    main()
