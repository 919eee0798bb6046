import os
import stat
import tomllib
from pathlib import Path

import pytest
from pydantic import BaseModel

from bridge.config import Settings, load_settings, starter_config, write_starter_config
from bridge.errors import ConfigError

ROOT = Path(__file__).parent.parent


def test_defaults_without_a_file(tmp_path):
    s = load_settings(tmp_path / "missing.toml", environ={})
    assert s.runner.name == "bundled"
    assert s.database_url.startswith("sqlite:///") and s.database_url.endswith("rhythm-bridge.db")
    assert [t.hour for t in s.boundaries] == [5, 12, 17, 22]


def test_missing_file_is_an_error_when_required(tmp_path):
    with pytest.raises(ConfigError, match="rhythm-bridge init"):
        load_settings(tmp_path / "missing.toml", environ={}, required=True)


def test_example_config_is_the_starter_and_matches_the_defaults():
    text = (ROOT / "config.example.toml").read_text()
    assert text == starter_config()
    from_file = Settings.model_validate(tomllib.loads(text))
    assert from_file.model_dump() == Settings().model_dump()


def test_every_setting_is_documented_in_the_example():
    text = (ROOT / "config.example.toml").read_text()

    def keys(model, prefix=""):
        for name in type(model).model_fields:
            value = getattr(model, name)
            if isinstance(value, BaseModel):
                yield from keys(value, f"{prefix}{name}.")
            else:
                yield f"{prefix}{name}", name

    for dotted, name in keys(Settings()):
        assert f"\n{name} =" in text, f"{dotted} is not in config.example.toml"


def test_env_overrides_file_values(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[database]\nurl = "sqlite:///from-file.db"\n[sources.ics]\nenabled = false\n')
    s = load_settings(
        cfg,
        environ={
            "RHYTHM_BRIDGE_DATABASE__URL": "sqlite:///from-env.db",
            "RHYTHM_BRIDGE_SOURCES__ICS__ENABLED": "true",
            "RHYTHM_BRIDGE_SOURCES__ICS__PATHS": '["/a.ics", "/b.ics"]',
            "RHYTHM_BRIDGE_SCHEDULE__CYCLE_MINUTES": "5",
        },
    )
    assert s.database_url == "sqlite:///from-env.db"
    assert s.sources.ics.enabled is True
    assert s.sources.ics.paths == ["/a.ics", "/b.ics"]
    assert s.schedule.cycle_minutes == 5


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('timezone = "Mars/Olympus"', "key 'timezone': unknown IANA time zone"),
        ('[slots]\nboundaries = ["05:00", "04:00", "17:00", "22:00"]', "key 'slots.boundaries'"),
        ('[slots]\nboundaries = ["5am", "12:00", "17:00", "22:00"]', "'5am' is not a time"),
        ("[sources.whoop]\ninterval_minutes = 0", "key 'sources.whoop.interval_minutes'"),
        (
            "[sources.whoop]\nintervall_minutes = 10",
            "key 'sources.whoop.intervall_minutes': unknown setting",
        ),
        ('[web]\nport = "eighty"', "key 'web.port'"),
        ("this is not toml", "not valid TOML"),
    ],
)
def test_bad_config_names_the_file_and_key_in_one_line(tmp_path, text, needle):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_settings(cfg, environ={})
    message = str(err.value)
    assert needle in message
    assert str(cfg) in message
    assert "\n" not in message


def test_bad_env_value_names_the_variable(tmp_path):
    with pytest.raises(
        ConfigError, match=r"environment variable RHYTHM_BRIDGE_WEB__PORT: key 'web\.port'"
    ):
        load_settings(tmp_path / "none.toml", environ={"RHYTHM_BRIDGE_WEB__PORT": "99999"})


def test_starter_config_is_private_and_not_overwritten(tmp_path):
    path = tmp_path / "cfg" / "config.toml"
    write_starter_config(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    path.write_text("# mine\n")
    with pytest.raises(ConfigError, match="--force"):
        write_starter_config(path)
    assert path.read_text() == "# mine\n"
    write_starter_config(path, force=True)
    assert path.read_text() == starter_config()


def test_state_directory_is_the_default_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "state"))
    assert Settings().data_path == tmp_path / "state"


def test_tz_naming_the_localtime_file_follows_its_link(monkeypatch, tmp_path):
    # TZ=":/etc/localtime" (Debian's and Docker's habit): the file's link names the zone.
    link = tmp_path / "localtime"
    link.symlink_to("/usr/share/zoneinfo/Europe/Berlin")
    monkeypatch.setenv("TZ", f":{link}")
    assert str(Settings().tz) == "Europe/Berlin"
    monkeypatch.setenv("TZ", ":/etc/localtime")
    assert Settings().tz is not None  # whatever this machine's zone: no error


def test_posix_tz_string_is_one_line_telling_to_set_timezone(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from bridge.cli.main import app

    monkeypatch.setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3")
    with pytest.raises(ConfigError, match="set timezone in the config"):
        _ = Settings().tz
    result = CliRunner().invoke(app, ["status"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.output.strip().startswith("error: TZ='CET-1CEST")
    assert len(result.output.strip().splitlines()) == 1
    # A zone set in the config wins over any TZ.
    assert str(Settings(timezone="Europe/Berlin").tz) == "Europe/Berlin"


def test_a_persons_notify_keys_override_the_installations_and_the_rest_is_kept():
    settings = Settings.model_validate(
        {
            "notify": {
                "ntfy_server": "https://ntfy.lan",
                "ntfy_topic": "me",
                "checkin_at": "08:30",
            },
            "people": {"ana": {"notify": {"ntfy_topic": "ana", "checkin_at": "07:45"}}},
        }
    )
    ana, me = settings.for_person("ana").notify, settings.for_person("me").notify
    assert (ana.ntfy_server, ana.ntfy_topic, ana.checkin_at) == ("https://ntfy.lan", "ana", "07:45")
    assert (me.ntfy_topic, me.checkin_at) == ("me", "08:30")
    off = Settings.model_validate(
        {
            "notify": {"ntfy_server": "https://ntfy.lan", "ntfy_topic": "me"},
            "people": {"bo": {"notify": {"ntfy_topic": ""}}},
        }
    )
    assert off.for_person("bo").notify.ntfy_topic == ""  # said so: no ntfy for bo
