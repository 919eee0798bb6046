"""The `rhythm-bridge` command line's spine: the typer app, its global options, and the
helpers every command uses (the settings and store of this invocation, JSON output).

Thin: commands parse, call one library function, print. Heavy modules (pandas,
SQLAlchemy, the connectors) are imported inside the commands so `rhythm-bridge --help`
stays fast.
"""

from __future__ import annotations

import json
import logging
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from bridge.errors import BridgeError

if TYPE_CHECKING:
    from typer.core import _click  # typer ships its own click: its Context, not click's

    from bridge.config import Settings
    from bridge.store import Store


# The order `--help` lists the commands in: as a person meets them (set up, try, run,
# look, bring data in, answer), then the tokens, the operator's tools, and the trainers
# last. tests/cli/test_first_hour.py fails when a command is missing here.
COMMAND_ORDER = (
    "init",
    "demo",
    "run",
    "status",
    "import",
    "sync",
    "auth",
    "meters",
    "recommend",
    "feedback",
    "checkin",
    "validity",
    "classify",
    "export",
    "serve",
    "web-token",
    "calendar-feed",
    "notify-token",
    "mqtt-password",
    "push-token",
    "person",
    "backup",
    "install-service",
    "worker",
    "train-classifier",
    "train-model",
    "train-transfer",
    "eval",
)


class _Group(TyperGroup):
    """Turns library errors into one line on stderr and exit code 2, in one place."""

    def list_commands(self, ctx: _click.Context) -> list[str]:
        # Any command not in COMMAND_ORDER comes before the trainers, in registration order.
        rank = {name: i for i, name in enumerate(COMMAND_ORDER)}
        unknown = COMMAND_ORDER.index("train-classifier") - 0.5
        return sorted(super().list_commands(ctx), key=lambda name: rank.get(name, unknown))

    def invoke(self, ctx: _click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BridgeError as err:
            typer.echo(f"error: {err}", err=True)
            raise typer.Exit(2) from None
        except OSError as err:
            # A path the person gave that cannot be written or read (a file where a folder
            # should be, no permission, a full disk): one line too, not a traceback.
            where = f"{err.filename}: " if err.filename else ""
            typer.echo(f"error: {where}{err.strerror or err}", err=True)
            raise typer.Exit(2) from None
        finally:
            # Each invocation owns its store: close its connections when the command ends
            # (an embedding program or a test may invoke many commands in one process).
            store = state.pop("store", None)
            if store is not None:
                store.dispose()
            state.pop("settings", None)
            state.pop("base_settings", None)


app = typer.Typer(
    cls=_Group,
    no_args_is_help=True,
    add_completion=True,
    help="Bridge your wearables and calendar to a personal-life model.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


state: dict[str, Any] = {}

# Dates outside these years are typos, not history (wearable data starts long after 1970).
EARLIEST, LATEST = date(1970, 1, 1), date(2100, 12, 31)


JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"rhythm-bridge {version('rhythm-bridge')}")
        raise typer.Exit()


@app.callback()
def _main(
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            envvar="RHYTHM_BRIDGE_CONFIG",
            help="Config file (default: platform config dir).",
        ),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log each step.")] = False,
    _version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
        ),
    ] = False,
    log_json: Annotated[
        bool, typer.Option("--log-json", envvar="RHYTHM_BRIDGE_LOG_JSON", help="Log JSON lines.")
    ] = False,
    person: Annotated[
        str | None,
        typer.Option(
            "--person",
            "-p",
            envvar="RHYTHM_BRIDGE_PERSON",
            metavar="NAME",
            help="Whose data the command reads and changes (default: the only person).",
        ),
    ] = None,
) -> None:
    from bridge.logs import setup_logging

    state["config"] = config
    state["person"] = person
    state["log_json"] = log_json
    setup_logging(logging.INFO if verbose else logging.WARNING, as_json=log_json)


def base_settings() -> Settings:
    """The config as written, before it is narrowed to one person (`current_settings`)."""
    from bridge.config import load_settings
    from bridge.errors import ConfigError

    if "base_settings" not in state:
        path = state.get("config")
        if path is not None and not Path(path).expanduser().exists():
            # Named on purpose (--config or $RHYTHM_BRIDGE_CONFIG): silently running on the
            # defaults would sync into the wrong database.
            raise ConfigError(
                f"{path}: no such config file; write one with `rhythm-bridge --config {path} init`"
            )
        state["base_settings"] = load_settings(path)
    return state["base_settings"]


def current_settings() -> Settings:
    """The settings as the person this invocation serves sees them."""
    if "settings" not in state:
        settings = base_settings()
        state["settings"] = settings.for_person(_whom(settings))
    return state["settings"]


def registry_store() -> Store:
    """The store, for what concerns the installation rather than one person (the registry
    of people): no person needs to be named."""
    from bridge.config import DEFAULT_PERSON

    return _open_store(base_settings(), state.get("person") or DEFAULT_PERSON)


def everyone() -> list[tuple[Settings, Store]]:
    """Each person this invocation serves, with their settings and store: the one named
    with --person, else every person here (the daemon and `run --once` serve a household)."""
    if state.get("person"):
        return [(current_settings(), current_store())]
    settings, store = base_settings(), registry_store()
    return [(settings.for_person(p), store.as_person(p)) for p in store.people() or [store.person]]


def _whom(settings: Settings) -> str:
    """The person this invocation serves: --person, else the only person registered."""
    from bridge.config import DEFAULT_PERSON, check_person
    from bridge.errors import ConfigError

    given = state.get("person")
    if given:
        try:
            check_person(given)
        except ValueError as err:
            raise ConfigError(f"--person: {err}") from None
    people = (
        _open_store(settings, given or DEFAULT_PERSON).people() if _store_exists(settings) else []
    )
    if given:
        if people and given not in people:
            raise ConfigError(
                f"--person {given}: no such person here ({', '.join(people)}); "
                f"add them with `rhythm-bridge person add {given}`"
            )
        return given
    if len(people) > 1:
        raise ConfigError(
            f"this installation keeps several people ({', '.join(people)}); "
            "name one with --person NAME (or RHYTHM_BRIDGE_PERSON)"
        )
    return people[0] if people else DEFAULT_PERSON


def _store_exists(settings: Settings) -> bool:
    # A database not made yet has nobody in it; `init` or `demo` must not make one to ask.
    url = settings.database_url
    if not url.startswith("sqlite"):
        return True
    from sqlalchemy.engine import make_url

    database = make_url(url).database
    return database is not None and database not in ("", ":memory:") and Path(database).exists()


def _open_store(settings: Settings, person: str) -> Store:
    from bridge.files import make_private
    from bridge.store import Store

    if "store" not in state:
        make_private(settings.data_path)  # an install from an older release: once
        state["store"] = Store(settings.database_url, person=person)
    return state["store"]


def current_store() -> Store:
    settings = current_settings()
    store = _open_store(settings, settings.person)
    if store.person != settings.person:
        state["store"] = store = store.as_person(settings.person)
    return store


def file_in(path: Path, default_name: str) -> Path:
    """`path`, or `path/default_name` when `path` is an existing folder (`backup ~/backups`)."""
    path = Path(path).expanduser()
    if path.is_dir():
        return path / default_name
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise BridgeError(f"{path}: {parent} is a file, not a folder")
            break
    return path


def print_json(doc: Any) -> None:
    typer.echo(json.dumps(doc, indent=2, ensure_ascii=False, default=str))


def fmt(value: float | None) -> str:
    return "  —  " if value is None else f"{value:5.2f}"


SlotOpt = Annotated[
    str | None,
    typer.Option(
        "--slot",
        metavar="SLOT",
        help="morning (0), afternoon (1), evening (2) or night (3); default: all.",
    ),
]


def slot_arg(value: str | None, option: str = "--slot") -> int | None:
    """A slot option given by name or number, as its number (None: not given)."""
    if value is None:
        return None
    from mappings.slots import parse_slot

    try:
        return parse_slot(value)
    except ValueError as err:
        raise BridgeError(f"{option}: {err}") from None


def date_arg(value: str | None, option: str) -> Any:
    """A YYYY-MM-DD option as a date (None: not given); absurd years are refused."""
    if value is None:
        return None
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise BridgeError(f"{option} {value!r}: use YYYY-MM-DD") from None
    if not EARLIEST.year <= day.year <= LATEST.year:
        raise BridgeError(f"{option} {value}: use a date between {EARLIEST.year} and {LATEST.year}")
    return day
