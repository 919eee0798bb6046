"""A household at the command line: `person add|list|remove`, `--person`, and what each
person's commands read, write and keep (rows, keyring entries, snapshot) on SQLite and,
with RB_TEST_DATABASE_URL, PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bridge.cli.main import app
from tests.helpers import write_config

CALENDAR = Path(__file__).resolve().parents[1] / "fixtures" / "calendar" / "work_week.ics"


@pytest.fixture
def cfg(tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RHYTHM_BRIDGE_KEYRING_KEY", "a test key of the household's keyring")
    monkeypatch.delenv("RHYTHM_BRIDGE_PERSON", raising=False)
    return write_config(
        tmp_path / "config.toml",
        tmp_path / "data",
        db=f'[database]\nurl = "{database_url}"',
        secrets='[secrets]\nbackend = "file"',
    )


def invoke(cfg: Path, *args: object, answer: str | None = None):
    return CliRunner().invoke(app, ["--config", str(cfg), *map(str, args)], input=answer)


def ok(cfg: Path, *args: object) -> str:
    result = invoke(cfg, *args)
    assert result.exit_code == 0, result.output
    return result.output


def test_one_person_needs_no_name_and_two_need_one(cfg: Path) -> None:
    assert json.loads(ok(cfg, "person", "list", "--json")) == ["me"]
    ok(cfg, "status")  # the only person: no --person needed
    assert "added ana" in ok(cfg, "person", "add", "ana")
    assert invoke(cfg, "person", "add", "ana").exit_code == 2
    result = invoke(cfg, "status")
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "--person NAME" in result.output
    result = invoke(cfg, "--person", "bo", "status")
    assert result.exit_code == 2 and "person add bo" in result.output
    result = invoke(cfg, "--person", "Ana Smith", "status")
    assert result.exit_code == 2 and "person name" in result.output
    ok(cfg, "--person", "ana", "status")


def test_each_person_sees_only_their_own_data(cfg: Path) -> None:
    ok(cfg, "person", "add", "ana")
    ok(cfg, "--person", "ana", "import", "ics", CALENDAR)
    ana = json.loads(ok(cfg, "--person", "ana", "status", "--json"))
    me = json.loads(ok(cfg, "--person", "me", "status", "--json"))
    assert ana != me
    # Importing the same file for me is not "already imported": the record is ana's.
    assert "0 events" not in ok(cfg, "--person", "me", "import", "ics", CALENDAR)


def test_removing_a_person_asks_and_takes_their_rows_secrets_and_snapshot(
    cfg: Path, tmp_path: Path
) -> None:
    ok(cfg, "person", "add", "ana")
    ok(cfg, "--person", "ana", "import", "ics", CALENDAR)
    ok(cfg, "--person", "me", "import", "ics", CALENDAR)
    ana_token = ok(cfg, "--person", "ana", "web-token").strip()
    me_token = ok(cfg, "--person", "me", "web-token").strip()
    assert ana_token != me_token  # every person has their own keyring entries
    ok(cfg, "--person", "ana", "run", "--once")  # a cycle writes the person's snapshot
    snapshot = tmp_path / "data" / "people" / "ana" / "latest.json"
    assert snapshot.exists()

    declined = invoke(cfg, "person", "remove", "ana", answer="n\n")
    assert declined.exit_code == 1
    assert "ana" in json.loads(ok(cfg, "person", "list", "--json"))

    result = invoke(cfg, "person", "remove", "ana", answer="y\n")
    assert result.exit_code == 0, result.output
    assert "1 secrets" in result.output
    assert json.loads(ok(cfg, "person", "list", "--json")) == ["me"]
    assert not snapshot.exists() and not snapshot.parent.exists()
    # me keeps their token and their calendar; ana's name is refused from now on.
    assert ok(cfg, "web-token").strip() == me_token
    assert json.loads(ok(cfg, "status", "--json")) != {}
    assert invoke(cfg, "--person", "ana", "status").exit_code == 2
    # Registered again, ana starts empty: no token of before comes back.
    ok(cfg, "person", "add", "ana")
    assert ok(cfg, "--person", "ana", "web-token").strip() != ana_token


def test_a_person_has_their_own_sources(tmp_path: Path, database_url: str) -> None:
    from bridge.config import load_settings

    cfg = write_config(
        tmp_path / "config.toml",
        tmp_path / "data",
        db=f'[database]\nurl = "{database_url}"',
        ana='[people.ana]\ntimezone = "America/New_York"\n'
        '[people.ana.sources.ics]\nenabled = true\npaths = ["/ana.ics"]\n'
        '[people.ana.notify]\nntfy_topic = "ana-rhythm"',
    )
    settings = load_settings(cfg)
    ana, me = settings.for_person("ana"), settings.for_person("me")
    assert ana.sources.ics.paths == ["/ana.ics"] and me.sources.ics.paths != ["/ana.ics"]
    assert str(ana.tz) == "America/New_York" and str(me.tz) == "Europe/Berlin"
    assert ana.notify.ntfy_topic == "ana-rhythm" and me.notify.ntfy_topic == ""
    assert ana.export_path == tmp_path / "data" / "people" / "ana" / "latest.json"
    assert me.export_path == tmp_path / "data" / "latest.json"
    assert ana.mqtt.base_topic == "rhythm-bridge/ana" and me.mqtt.base_topic == "rhythm-bridge"
    bad = write_config(tmp_path / "bad.toml", tmp_path / "data", x='[people."Ana B"]')
    result = CliRunner().invoke(app, ["--config", str(bad), "status"])
    assert result.exit_code == 2 and "people" in result.output


def test_a_cycle_serves_everyone_each_with_their_own_snapshot(cfg: Path, tmp_path: Path) -> None:
    ok(cfg, "person", "add", "ana")
    ok(cfg, "--person", "ana", "import", "ics", CALENDAR)
    out = ok(cfg, "run", "--once")
    assert "me: cycle done" in out and "ana: cycle done" in out
    me_doc = json.loads((tmp_path / "data" / "latest.json").read_text())
    ana_doc = json.loads((tmp_path / "data" / "people" / "ana" / "latest.json").read_text())
    assert me_doc != ana_doc
    # --person narrows it to one person.
    out = ok(cfg, "--person", "ana", "run", "--once")
    assert "cycle done" in out and "me:" not in out


def test_home_assistant_gets_one_device_per_person(tmp_path: Path) -> None:
    from bridge.config import Settings
    from bridge.out.mqtt.entities import device
    from bridge.out.mqtt.link import topics_of

    settings = Settings()
    me, ana = topics_of(settings), topics_of(settings.for_person("ana"))
    assert me.base == "rhythm-bridge" and ana.base == "rhythm-bridge/ana"
    assert device(me)["identifiers"] != device(ana)["identifiers"]
    assert (device(me)["name"], device(ana)["name"]) == ("rhythm-bridge", "rhythm-bridge ana")
    assert ana.config("sensor", "vitality") != me.config("sensor", "vitality")
