"""Every source, declared once: what the scheduler, `auth`, `status`, the CLI and the
config are derived from.

A spec is data only (no connector is imported here), so `rhythm-bridge --help` and the
daemon read it without loading httpx or Google's client. The connector module itself is
`connectors.<name>`; `tests/connectors/test_registry.py` checks each spec against the config model,
`config.example.toml`, the plausibility ranges and what the module really emits.

Adding a source: a module in `connectors/`, one `SourceSpec` in `SOURCES` below, its
config section in `bridge/config.py` and `config.example.toml`, and for a source with
credentials an `authorize_*` flow in `bridge/intake/connect.py` with its `auth` command
(see docs/ARCHITECTURE.md, "Where to add").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True, kw_only=True)
class Auth:
    """A source's credentials, by their keyring entry names (never their values)."""

    kind: Literal["oauth", "api_key"]
    # What follows `rhythm-bridge auth`: one spelling in every message, status and README.
    command: str
    credential: str  # the long-lived entry: stored means "connected"
    token: str  # the entry holding the access token's expiry, for `auth status`
    secrets: tuple[str, ...]  # every entry `auth revoke` deletes


@dataclass(frozen=True, kw_only=True)
class Watch:
    """Files a source picks up from a watched folder named by one setting of its section."""

    setting: str
    patterns: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class SourceSpec:
    """One connector module, `connectors.<name>`, and how the bridge runs it."""

    name: str
    # Metric keys of the readings it emits, or "calendar" / "tasks".
    provides: frozenset[str]
    # The `[sources.<section>]` table it reads; a spec whose section is its own name is a
    # scheduled source (enabled, interval, its row in `status`). None: no section.
    section: str | None = None
    # The name its records are stored under (SOURCE of the module); default: its name.
    stored_as: str = ""
    imports: bool = False  # `rhythm-bridge import <cli>` reads a file of it
    folders: bool = False  # ... or the folder an export ZIP unzips to
    pushed: bool = False  # a phone POSTs it to /api/push/<cli>
    live: bool = False  # the module has `pull(...)`, run by the scheduler
    watch: Watch | None = None
    auth: Auth | None = None
    # Other spellings `sync` and `auth revoke` accept for a scheduled source.
    aliases: tuple[str, ...] = field(default=())

    @property
    def module(self) -> str:
        return f"connectors.{self.name}"

    @property
    def cli(self) -> str:
        """How the CLI spells it: hyphens (the config section keeps underscores)."""
        return self.name.replace("_", "-")

    @property
    def source(self) -> str:
        return self.stored_as or self.name

    @property
    def scheduled(self) -> bool:
        return self.section == self.name

    @property
    def auth_kind(self) -> str:
        return self.auth.kind if self.auth else "none"


_GOOGLE_TOKEN = "google_calendar:token"
_FIT = frozenset(
    {"steps", "heart_rate", "hrv_rmssd", "sleep", "stress", "respiratory_rate", "resting_hr"}
    | {"workout", "workout_energy", "workout_distance"}  # an activity file's session
)
_APPLE_PUSH = frozenset(
    {"heart_rate", "resting_hr", "hrv_sdnn", "steps", "respiratory_rate", "active_energy"}
    | {"mindful", "sleep"}
)

# The order is the order of `status`, `sync` and the CLI's lists.
SOURCES: tuple[SourceSpec, ...] = (
    SourceSpec(
        name="apple_health",
        provides=frozenset(
            {"steps", "hrv_sdnn", "resting_hr", "heart_rate", "respiratory_rate"}
            | {"active_energy", "hrv_rmssd", "sleep", "mindful", "workout"}
            | {"workout_energy", "workout_distance"}
        ),
        section="apple_health",
        imports=True,
        watch=Watch(setting="watch_dir", patterns=("*.zip", "*.xml")),
    ),
    SourceSpec(
        name="garmin_export",
        provides=frozenset(
            {"resting_hr", "steps", "stress", "body_battery", "sleep", "hrv_rmssd"}
            | {"respiratory_rate"}
            | _FIT  # the FIT files inside the export
        ),
        section="garmin",
        imports=True,
        watch=Watch(setting="export_dir", patterns=("*.zip",)),
    ),
    SourceSpec(
        name="fit",
        provides=_FIT,
        section="garmin",
        imports=True,
        watch=Watch(setting="export_dir", patterns=("*.fit", "*.FIT")),
    ),
    SourceSpec(
        name="fitbit",
        provides=frozenset(
            {"sleep", "sleep_score", "resting_hr", "steps", "heart_rate", "active_minutes"}
            | {"hrv_rmssd", "respiratory_rate", "stress_score", "readiness_score", "restoration"}
        ),
        section="fitbit",
        imports=True,
        folders=True,
        watch=Watch(setting="export_dir", patterns=("*.zip",)),
    ),
    SourceSpec(
        name="readings",
        # What connectors/readings.py UNITS accepts: the metrics the meters read, and
        # the vendor scores kept beside them.
        provides=frozenset(
            {"sleep", "hrv_rmssd", "hrv_sdnn", "resting_hr", "heart_rate", "respiratory_rate"}
            | {"steps", "stress", "recovery", "body_battery", "sleep_score", "readiness_score"}
            | {"workout", "mindful", "restoration"}
        ),
        imports=True,
    ),
    SourceSpec(
        name="ics",
        provides=frozenset({"calendar", "tasks"}),
        section="ics",
        imports=True,
    ),
    SourceSpec(
        name="whoop_export",
        provides=frozenset(
            {"recovery", "hrv_rmssd", "resting_hr", "sleep", "sleep_score", "respiratory_rate"}
            | {"heart_rate", "workout", "journal"}
        ),
        section="whoop",
        stored_as="whoop",  # the API's rows: a night pulled and exported is one night
        imports=True,
        folders=True,
        watch=Watch(setting="export_dir", patterns=("*.zip",)),
    ),
    SourceSpec(
        name="google_calendar",
        provides=frozenset({"calendar"}),
        section="google_calendar",
        live=True,
        auth=Auth(
            kind="oauth",
            command="google",
            credential=_GOOGLE_TOKEN,
            token=_GOOGLE_TOKEN,
            secrets=(_GOOGLE_TOKEN,),
        ),
        aliases=("google",),
    ),
    SourceSpec(
        name="google_tasks",
        provides=frozenset({"tasks"}),
        section="google_tasks",
        live=True,
        # One Google token serves both sources; Tasks needs its scope added to it.
        auth=Auth(
            kind="oauth",
            command="google --tasks",
            credential=_GOOGLE_TOKEN,
            token=_GOOGLE_TOKEN,
            secrets=(_GOOGLE_TOKEN,),
        ),
    ),
    SourceSpec(
        name="whoop",
        provides=frozenset(
            {"recovery", "hrv_rmssd", "resting_hr", "sleep", "sleep_score", "respiratory_rate"}
            | {"heart_rate", "workout"}
        ),
        section="whoop",
        live=True,
        auth=Auth(
            kind="oauth",
            command="whoop",
            credential="whoop:token",
            token="whoop:token",
            secrets=("whoop:token", "whoop:client_secret", "whoop:user_id"),
        ),
    ),
    SourceSpec(
        name="garmin",
        provides=frozenset(
            {"hrv_rmssd", "sleep", "sleep_score", "respiratory_rate", "resting_hr", "stress"}
            | {"body_battery", "steps", "heart_rate"}
        ),
        section="garmin",
        live=True,
        auth=Auth(
            kind="api_key",
            command="garmin",
            credential="garmin:api_key",
            token="garmin:token",
            secrets=("garmin:api_key", "garmin:token"),
        ),
    ),
    SourceSpec(
        name="health_auto_export",
        provides=_APPLE_PUSH | {"workout", "workout_energy", "workout_distance"},
        stored_as="apple_push",
        pushed=True,
    ),
    SourceSpec(
        name="shortcut",
        provides=_APPLE_PUSH,
        stored_as="apple_push",
        pushed=True,
    ),
)


def tables(sources: tuple[SourceSpec, ...]) -> dict[str, dict[str, SourceSpec]]:
    """The lookups below, from a tuple of specs (a test derives them for a fake source)."""
    scheduled = {s.name: s for s in sources if s.scheduled}
    return {
        "BY_NAME": {s.name: s for s in sources},
        "SCHEDULED": scheduled,
        "IMPORT_KINDS": {s.cli: s for s in sources if s.imports},
        "PUSH_KINDS": {s.cli: s for s in sources if s.pushed},
        "WITH_AUTH": {s.name: s for s in scheduled.values() if s.auth},
    }


_TABLES = tables(SOURCES)
BY_NAME = _TABLES["BY_NAME"]
# The scheduled sources by section (config section = stored source = SyncState name).
SCHEDULED = _TABLES["SCHEDULED"]
IMPORT_KINDS = _TABLES["IMPORT_KINDS"]  # by `rhythm-bridge import` kind
PUSH_KINDS = _TABLES["PUSH_KINDS"]  # by /api/push/<kind>
WITH_AUTH = _TABLES["WITH_AUTH"]  # the scheduled sources `rhythm-bridge auth` sets up


def section_specs(section: str) -> tuple[SourceSpec, ...]:
    """Every spec a scheduled section runs: its watched-file readers, then its own."""
    readers = (s for s in BY_NAME.values() if s.section == section and not s.scheduled)
    return (*readers, SCHEDULED[section])


def auth_command(source: str) -> str:
    """The command that sets up (or renews) a scheduled source's authorization."""
    spec = SCHEDULED[source]
    return f"rhythm-bridge auth {spec.auth.command if spec.auth else spec.name}"


def auth_choices() -> list[str]:
    """The sources `auth revoke` takes, as `auth` spells them (one Google for both)."""
    commands = (spec.auth.command.split()[0] for spec in WITH_AUTH.values() if spec.auth)
    return list(dict.fromkeys(commands))


def spelled(names: list[str]) -> str:
    """'a, b or c': how help texts and messages list choices."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _check() -> None:
    # Two specs answering to one spelling would make `sync`/`import` pick one silently.
    for table in ("name", "cli"):
        seen = [getattr(s, table) for s in BY_NAME.values()]
        if len(seen) != len(set(seen)) or len(BY_NAME) != len(SOURCES):
            raise ValueError(f"connectors.registry: two sources share a {table}")
    for spec in BY_NAME.values():
        if spec.section is not None and spec.section not in SCHEDULED:
            raise ValueError(f"{spec.name}: section {spec.section!r} is no scheduled source")


_check()
