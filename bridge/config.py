"""Settings: read once from TOML, then environment overrides, into one typed object.

Environment variables override file values: `RHYTHM_BRIDGE_<KEY>` with `__` between
levels, e.g. `RHYTHM_BRIDGE_DATABASE__URL=postgresql://...` or
`RHYTHM_BRIDGE_SOURCES__WHOOP__ENABLED=true`. Values are read as TOML literals when they
parse as one (`true`, `15`, `["a", "b"]`) and as plain strings otherwise.
`RHYTHM_BRIDGE_CONFIG` names the config file itself and `RHYTHM_BRIDGE_LOG_JSON=1` switches
the log to JSON lines; neither is a config key.
"""

from __future__ import annotations

import os
import re
import tomllib
from datetime import time, tzinfo
from functools import cached_property
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
)

from bridge.errors import ConfigError

ENV_PREFIX = "RHYTHM_BRIDGE_"
CONFIG_ENV = "RHYTHM_BRIDGE_CONFIG"
# The encrypted keyring's key is a secret, not a setting (see bridge/secrets.py).
KEYRING_KEY_ENV = "RHYTHM_BRIDGE_KEYRING_KEY"
# Variables with the prefix that are not config keys: the config path, the log format
# switch and the keyring key.
NON_CONFIG_ENV = frozenset({CONFIG_ENV, "RHYTHM_BRIDGE_LOG_JSON", KEYRING_KEY_ENV})
APP_NAME = "rhythm-bridge"

# People. The person a one-person install serves (its store's rows, its keyring entries
# under the plain service name, its outputs at their plain paths) and the shape of a name:
# a name is part of keys, file names, topics and keyring services, so it is plain.
DEFAULT_PERSON = "me"
PERSON_MAX = 64
PERSON_NAME = re.compile(rf"[a-z0-9][a-z0-9_-]{{0,{PERSON_MAX - 1}}}")


def check_person(name: str) -> str:
    """`name` when it is a valid person name; ValueError saying what a name may be."""
    if not PERSON_NAME.fullmatch(name):
        raise ValueError(
            f"person name {name!r}: use 1-{PERSON_MAX} lowercase letters, digits, '-' or '_', "
            "starting with a letter or digit"
        )
    return name


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


def parse_boundaries(values: list[str] | tuple[str, ...]) -> tuple[time, ...]:
    """Parse four increasing "HH:MM" strings; raise ValueError saying what is wrong."""
    if len(values) != 4:
        raise ValueError(
            f"expected 4 times (morning, afternoon, evening, night), got {len(values)}"
        )
    parsed = []
    for value in values:
        try:
            parsed.append(time.fromisoformat(value))
        except (TypeError, ValueError):
            raise ValueError(f'{value!r} is not a time like "05:00"') from None
    if any(a >= b for a, b in pairwise(parsed)):
        raise ValueError("times must increase within one calendar day")
    return tuple(parsed)


class SlotSettings(_Section):
    boundaries: list[str] = ["05:00", "12:00", "17:00", "22:00"]

    @field_validator("boundaries")
    @classmethod
    def _check(cls, value: list[str]) -> list[str]:
        parse_boundaries(value)
        return value


class DatabaseSettings(_Section):
    url: str = ""


class ExportSettings(_Section):
    path: str = ""
    days: int = Field(7, ge=1, le=366)


class ScheduleSettings(_Section):
    cycle_minutes: int = Field(15, ge=1, le=1440)
    recommend_lead_minutes: int = Field(30, ge=0, le=720)


class SourceSettings(_Section):
    enabled: bool = False
    interval_minutes: int = Field(60, ge=1, le=10080)


class AppleHealthSettings(SourceSettings):
    watch_dir: str = ""


class IcsSettings(SourceSettings):
    interval_minutes: int = Field(30, ge=1, le=10080)
    paths: list[str] = []
    urls: list[str] = []
    max_instances_per_event: int = Field(10_000, ge=1)
    max_instances_per_file: int = Field(20_000, ge=1)


class GoogleCalendarSettings(SourceSettings):
    interval_minutes: int = Field(15, ge=1, le=10080)
    calendars: list[str] = ["primary"]
    client_secrets_file: str = ""
    api_base_url: str = "https://www.googleapis.com/calendar/v3/"
    token_url: str = "https://oauth2.googleapis.com/token"
    revoke_url: str = "https://oauth2.googleapis.com/revoke"
    redirect_port: int = Field(8080, ge=1, le=65535)


class GoogleTasksSettings(SourceSettings):
    interval_minutes: int = Field(30, ge=1, le=10080)
    lists: list[str] = []
    api_base_url: str = "https://tasks.googleapis.com/"


class WhoopSettings(SourceSettings):
    api_base_url: str = "https://api.prod.whoop.com/developer"
    auth_url: str = "https://api.prod.whoop.com/oauth/oauth2/auth"
    token_url: str = "https://api.prod.whoop.com/oauth/oauth2/token"
    client_id: str = ""
    redirect_uri: str = "https://localhost:8080/callback"
    refetch_days: int = Field(3, ge=0, le=30)
    requests_per_minute: int = Field(100, ge=1, le=1000)
    export_dir: str = ""
    import_journal: bool = False


class GarminSettings(SourceSettings):
    interval_minutes: int = Field(240, ge=30, le=10080)
    api_base_url: str = "https://personal.connectapi.garmin.com"
    token_url: str = (
        "https://personal.connectapi.garmin.com"
        "/personalapitoken-service/personal-api/personal-api-key/token"
    )
    export_dir: str = ""
    refetch_days: int = Field(3, ge=0, le=30)
    max_range_days: int = Field(28, ge=1, le=28)
    rate_limit_backoff_hours: float = Field(2.0, ge=0.25, le=48)


class FitbitSettings(SourceSettings):
    export_dir: str = ""


class Sources(_Section):
    """One section per scheduled source of connectors/registry.py, named as it is there:
    declared here by hand (the config sits below the connectors), and checked against the
    registry by tests/connectors/test_registry.py."""

    apple_health: AppleHealthSettings = AppleHealthSettings()
    ics: IcsSettings = IcsSettings()
    google_calendar: GoogleCalendarSettings = GoogleCalendarSettings()
    google_tasks: GoogleTasksSettings = GoogleTasksSettings()
    whoop: WhoopSettings = WhoopSettings()
    garmin: GarminSettings = GarminSettings()
    fitbit: FitbitSettings = FitbitSettings()


class SecretsSettings(_Section):
    backend: Literal["auto", "system", "file"] = "auto"
    file: str = ""


class HttpSettings(_Section):
    timeout_seconds: float = Field(30.0, gt=0, le=600)
    max_attempts: int = Field(4, ge=1, le=10)
    backoff_base_seconds: float = Field(1.0, ge=0, le=60)
    backoff_max_seconds: float = Field(60.0, ge=0, le=3600)


class RunnerSettings(_Section):
    name: str = "bundled"
    options: dict[str, Any] = {}
    adapter_refit_days: int = Field(7, ge=0, le=365)


class WindowSettings(_Section):
    min_minutes: dict[str, int] = {}
    max_minutes: int = Field(90, ge=10, le=720)
    look_ahead_slots: int = Field(8, ge=1, le=28)


class GoogleWriteSettings(_Section):
    enabled: bool = False
    calendar: str = Field("primary", min_length=1, max_length=300)


class ClassifierSettings(_Section):
    rules_file: str = ""
    model_file: str = ""
    llm_endpoint: str = ""
    llm_api: Literal["auto", "ollama", "openai"] = "auto"
    llm_model: str = ""
    llm_daily_budget: int = Field(200, ge=0)
    llm_timeout_seconds: float = Field(30.0, gt=0, le=600)


class MeterSettings(_Section):
    weights_file: str = ""
    history_days: int = Field(0, ge=0, le=36600)
    stale_after_hours: float = Field(48.0, gt=0, le=24 * 366)
    min_confidence: float = Field(0.15, ge=0, le=1)
    in_process: bool = False


class WebSettings(_Section):
    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=1, le=65535)
    max_body_kb: int = Field(64, ge=1, le=1 << 20)


class PushSettings(_Section):
    enabled: bool = False
    max_body_mb: int = Field(128, ge=1, le=4096)
    max_inflated_mb: int = Field(512, ge=1, le=16384)
    trust_forwarded: bool = False


class NotifySettings(_Section):
    ntfy_server: str = ""
    ntfy_topic: str = ""
    webhook_url: str = ""
    callback_url: str = ""
    timeout_seconds: float = Field(10.0, gt=0, le=120)
    # "HH:MM" in the person's zone: a daily ntfy check-in with one-tap buttons; "" = none.
    checkin_at: str = ""

    @field_validator("checkin_at")
    @classmethod
    def _check_checkin_at(cls, value: str) -> str:
        if value and not re.fullmatch(r"\d\d:\d\d", value):
            raise ValueError(f'{value!r} is not a time like "08:30" (or "" for none)')
        if value:
            try:
                time.fromisoformat(value)
            except ValueError:
                raise ValueError(f'{value!r} is not a time like "08:30"') from None
        return value

    @property
    def checkin_time(self) -> time | None:
        return time.fromisoformat(self.checkin_at) if self.checkin_at else None


def _check_topic(value: str) -> str:
    """An MQTT topic prefix: levels split by "/", no wildcards, no empty level."""
    if not value or any(c in value for c in "+#\0") or "" in value.split("/"):
        raise ValueError(
            f'{value!r} is not a topic prefix: use levels like "rhythm-bridge" without '
            "+, #, empty levels or a leading/trailing /"
        )
    return value


class MqttSettings(_Section):
    enabled: bool = False
    host: str = "localhost"
    port: int = Field(1883, ge=1, le=65535)
    username: str = ""
    tls: bool = False
    ca_file: str = ""
    discovery_prefix: str = "homeassistant"
    base_topic: str = "rhythm-bridge"

    @field_validator("discovery_prefix", "base_topic")
    @classmethod
    def _topic(cls, value: str) -> str:
        return _check_topic(value)


def _known_zone(value: str) -> str:
    if value:
        _zone(value)
    return value


# An IANA zone name, or "" for the machine's zone.
Zone = Annotated[str, AfterValidator(_known_zone)]


class WorkersSettings(_Section):
    """`rhythm-bridge worker` (many people on PostgreSQL): how the workers share the
    providers' limits and how often they queue work (docs/guides/many-people.md)."""

    concurrency: int = Field(4, ge=1, le=64)
    # Every window a provider documents for one client application, as [requests, seconds];
    # all workers draw on one budget kept in PostgreSQL.
    limits: dict[str, list[tuple[int, float]]] = {
        "whoop": [(100, 60.0), (10_000, 86_400.0)],
        "google_calendar": [(10_000, 60.0)],
    }
    # Requests one sync of a source makes (token refresh included), for the polling interval.
    requests_per_sync: dict[str, int] = {"whoop": 5, "google_calendar": 3, "garmin": 8}
    quota_margin: float = Field(0.8, gt=0, le=1)
    # How often due syncs are queued (cron; a sixth field is seconds) and cycles run.
    schedule_cron: str = "* * * * *"
    cycle_cron: str = "*/15 * * * *"
    # A worker silent this long is dead: `stalled_cron` puts its jobs back in the queue.
    stalled_after_seconds: float = Field(60.0, ge=5, le=3600)
    stalled_cron: str = "* * * * *"
    # How long one request waits for the shared budget before its sync is retried later.
    budget_wait_seconds: float = Field(30.0, ge=0, le=3600)


class PersonSettings(_Section):
    """What differs for one person of a household: their sources, time zone and
    notifications. Everything else (database, schedule, web, ...) is the installation's."""

    timezone: Zone = ""
    sources: Sources | None = None
    notify: NotifySettings | None = None


class Settings(_Section):
    """Everything the daemon reads from its config, with the defaults of a fresh install."""

    model_config = ConfigDict(extra="forbid", ignored_types=(cached_property,))

    timezone: Zone = ""
    data_dir: str = ""
    slots: SlotSettings = SlotSettings()
    database: DatabaseSettings = DatabaseSettings()
    export: ExportSettings = ExportSettings()
    schedule: ScheduleSettings = ScheduleSettings()
    sources: Sources = Sources()
    secrets: SecretsSettings = SecretsSettings()
    http: HttpSettings = HttpSettings()
    runner: RunnerSettings = RunnerSettings()
    windows: WindowSettings = WindowSettings()
    google_write: GoogleWriteSettings = GoogleWriteSettings()
    classifier: ClassifierSettings = ClassifierSettings()
    meters: MeterSettings = MeterSettings()
    web: WebSettings = WebSettings()
    push: PushSettings = PushSettings()
    notify: NotifySettings = NotifySettings()
    mqtt: MqttSettings = MqttSettings()
    workers: WorkersSettings = WorkersSettings()
    people: dict[str, PersonSettings] = {}

    # Whom this view of the settings serves (`for_person`); not a config key.
    _person: str = PrivateAttr(DEFAULT_PERSON)

    @field_validator("people")
    @classmethod
    def _check_people(cls, value: dict[str, PersonSettings]) -> dict[str, PersonSettings]:
        for name in value:
            check_person(name)
        return value

    @property
    def person(self) -> str:
        return self._person

    def for_person(self, name: str) -> Settings:
        """These settings as `name` sees them: their own `[people.NAME]` sources and time
        zone where given, and their outputs (snapshot, keyring, topics) under their name."""
        check_person(name)
        own = self.people.get(name)
        update: dict[str, Any] = {}
        if own is not None and own.sources is not None:
            update["sources"] = own.sources
        if own is not None and own.timezone:
            update["timezone"] = own.timezone
        if own is not None and own.notify is not None:
            # Their keys over the installation's: `ntfy_topic` alone is their own topic on
            # the installation's server (and `checkin_at` alone their own time).
            mine = {key: getattr(own.notify, key) for key in own.notify.model_fields_set}
            update["notify"] = self.notify.model_copy(update=mine)
        if name != DEFAULT_PERSON:
            # Home Assistant shows one device per person: their own topics and device id.
            base = f"{self.mqtt.base_topic}/{name}"
            update["mqtt"] = self.mqtt.model_copy(update={"base_topic": base})
        view = self.model_copy(update=update)
        # model_copy keeps the cached time zone of the original; a person's own is read anew.
        view.__dict__.pop("tz", None)
        view._person = name
        return view

    @cached_property
    def tz(self) -> tzinfo:
        return _zone(self.timezone or detect_timezone())

    @cached_property
    def boundaries(self) -> tuple[time, ...]:
        return parse_boundaries(self.slots.boundaries)

    @property
    def data_path(self) -> Path:
        if self.data_dir:
            return Path(self.data_dir).expanduser()
        # systemd's StateDirectory= sets this; use it so the unit needs no extra config.
        if os.environ.get("STATE_DIRECTORY"):
            return Path(os.environ["STATE_DIRECTORY"].split(":")[0])
        from platformdirs import user_data_path

        return user_data_path(APP_NAME)

    @property
    def database_url(self) -> str:
        return self.database.url or f"sqlite:///{self.data_path / 'rhythm-bridge.db'}"

    @property
    def person_path(self) -> Path:
        """Where this person's own files live (snapshot, learned adapter, retrained
        classifier, token locks): the data dir for the default person, so a one-person
        install keeps its files where they were; `people/NAME` in it for anyone else."""
        if self.person == DEFAULT_PERSON:
            return self.data_path
        return self.data_path / "people" / self.person

    @property
    def export_path(self) -> Path:
        if not self.export.path:
            return self.person_path / "latest.json"
        path = Path(self.export.path).expanduser()
        if self.person == DEFAULT_PERSON:
            return path
        # One snapshot per person, beside the configured one: latest.json -> latest.ana.json
        return path.with_name(f"{path.stem}.{self.person}{path.suffix}")


def _zone(name: str) -> tzinfo:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f'unknown IANA time zone {name!r} (e.g. "Europe/Berlin")') from None


def _zone_of_link(path: str) -> str | None:
    """The IANA name a zoneinfo file stands for, from the link that names it (None: no name)."""
    target = os.path.realpath(path)
    if "zoneinfo/" not in target:
        return None
    name = target.split("zoneinfo/", 1)[1]
    return name.removeprefix("posix/").removeprefix("right/")


def _is_zone(name: str) -> bool:
    try:
        _zone(name)
    except ValueError:
        return False
    return True


def detect_timezone() -> str:
    """The machine's IANA zone name: $TZ, then /etc/localtime, then /etc/timezone, else UTC.

    $TZ may name a zone (`Europe/Berlin`, `:Europe/Berlin`) or a zoneinfo file
    (`:/etc/localtime`, followed to the zone it links to). A POSIX rule
    (`CET-1CEST,M3.5.0,M10.5.0/3`) names no zone: a ConfigError says to set `timezone`.
    """
    raw = os.environ.get("TZ", "")
    tz = raw.lstrip(":")
    if tz:
        name = _zone_of_link(tz) if tz.startswith("/") else tz
        if name and _is_zone(name):
            return name
        if not tz.startswith("/") or os.path.exists(tz):
            raise ConfigError(
                f"TZ={raw!r} is not an IANA time zone name; set timezone in the config "
                '(e.g. timezone = "Europe/Berlin") or TZ to a zone name'
            )
    try:
        name = _zone_of_link("/etc/localtime") if os.path.islink("/etc/localtime") else None
        if name and _is_zone(name):
            return name
    except OSError:
        pass
    try:
        name = Path("/etc/timezone").read_text().strip()
        if name and _is_zone(name):
            return name
    except OSError:
        pass
    return "UTC"


def default_config_path() -> Path:
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV]).expanduser()
    from platformdirs import user_config_path

    return user_config_path(APP_NAME) / "config.toml"


def _env_overrides(environ: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Nested overrides from the environment, and which variable set each dotted key."""
    data: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or name in NON_CONFIG_ENV:
            continue
        parts = name[len(ENV_PREFIX) :].lower().split("__")
        try:
            value: Any = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        node = data
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                break
        else:
            node[parts[-1]] = value
            origin[".".join(parts)] = name
    return data, origin


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def load_settings(
    path: Path | None = None, environ: dict[str, str] | None = None, *, required: bool = False
) -> Settings:
    """Read the config file (if any) and the environment; raise ConfigError naming the key."""
    environ = dict(os.environ if environ is None else environ)
    path = path or default_config_path()
    data: dict[str, Any] = {}
    if path.exists():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as err:
            raise ConfigError(f"{path}: not valid TOML: {err}") from None
        except (OSError, UnicodeDecodeError) as err:
            raise ConfigError(f"{path}: cannot read config: {err}") from None
    elif required:
        raise ConfigError(f"{path}: config file not found; run `rhythm-bridge init` to create one")
    overrides, origin = _env_overrides(environ)
    try:
        return Settings.model_validate(_merge(data, overrides))
    except ValidationError as err:
        first = err.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "(top level)"
        where = f"environment variable {origin[key]}" if key in origin else str(path)
        msg = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            msg = "unknown setting (check the spelling against config.example.toml)"
        raise ConfigError(f"{where}: key '{key}': {msg}") from None


def starter_config() -> str:
    """The documented example config, as `rhythm-bridge init` writes it."""
    from importlib.resources import files

    return files("bridge").joinpath("config.example.toml").read_text(encoding="utf-8")


def write_starter_config(path: Path, *, force: bool = False) -> Path:
    """Write the starter config with mode 0600; refuse to overwrite unless forced."""
    if path.exists() and not force:
        raise ConfigError(f"{path}: already exists; pass --force to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(starter_config())
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path
