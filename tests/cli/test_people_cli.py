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


# Every command of the CLI, and how the household test below runs it for ana while me has
# data of their own; or where its isolation is tested instead, and why. A new command must
# be placed in one of the two (the test fails otherwise).
AS_ANA: dict[str, tuple[tuple[str, ...], ...]] = {
    "run": (("run", "--once"),),
    "status": (("status",), ("status", "--json")),
    "import": (("import", "ics", "{calendar}"), ("import", "readings", "{readings}")),
    "sync": (("sync",),),
    "meters": (("meters", "--json"), ("meters", "--from", "2026-11-16", "--json")),
    "recommend": (("recommend", "--json"),),
    "feedback": (),  # ana answering me's recommendation: refused, below
    "checkin": (("checkin", "energy=2", "mood=3"),),
    "validity": (("validity", "--json"),),
    "classify": (
        ("classify", "--questions", "--json"),
        ("classify", "--correct", "Team sync", "SOCIALIZE"),
        ("classify", "Team sync", "--json"),
    ),
    "export": (("export", "--out", "{out}"),),
    "calendar-feed": (("calendar-feed",),),
    "web-token": (("web-token",),),
    "notify-token": (("notify-token",),),  # the token is read from the prompt
    "mqtt-password": (("mqtt-password",),),
    "push-token": (("push-token", "create", "ana-phone"), ("push-token", "list")),
    "auth": (("auth", "status"),),
    "backup": (),  # the whole store's: refused with --person in a household, below
    "train-classifier": (("train-classifier",),),
}
ELSEWHERE = {
    "init": "writes the config file; no person's data",
    "demo": "a throwaway store of its own",
    "serve": "tests/web/test_household_web.py, route by route",
    "person": "the tests above: add, list, remove",
    "install-service": "writes the systemd unit; no person's data",
    "worker": "tests/daemon/test_workers.py, on PostgreSQL",
    "train-model": "simulated people only",
    "train-transfer": "simulated people only",
    "eval": "simulated people and public datasets only",
}


def _own_state(data: Path, database_url: str, person: str) -> dict[str, object]:
    """Everything of `person`'s: their rows in every table that has a person, their keyring
    entries, and their files (me's: the data dir without `people/`; others': theirs)."""
    from sqlalchemy import select

    from bridge.auth.secrets import FILE_NAME, EncryptedFileKeyring, service_of
    from bridge.store import Store
    from bridge.store.db import OWNED

    store = Store(database_url)
    try:
        with store.engine.connect() as conn:
            rows = {
                table.name: sorted(
                    repr(tuple(row))
                    for row in conn.execute(select(table).where(table.c.person == person))
                )
                for table in (m.__table__ for m in OWNED)  # type: ignore[attr-defined]
            }
    finally:
        store.dispose()
    ring = EncryptedFileKeyring(data / FILE_NAME)._load()
    home = data if person == "me" else data / "people" / person
    shared = {FILE_NAME, FILE_NAME + ".lock"}
    files = {
        p.relative_to(data).as_posix(): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file()
        and not (person == "me" and p.relative_to(data).parts[0] == "people")
        and not p.name.startswith("rhythm-bridge.db")
        and p.name not in shared
        and not p.name.endswith(".lock")
    }
    return {"rows": rows, "secrets": dict(ring.get(service_of(person), {})), "files": files}


def test_every_command_of_one_person_leaves_the_others_data_unseen_and_unchanged(
    cfg: Path, tmp_path: Path, database_url: str
) -> None:
    from bridge.cli.core import COMMAND_ORDER

    assert set(AS_ANA) | set(ELSEWHERE) == set(COMMAND_ORDER)
    assert not set(AS_ANA) & set(ELSEWHERE)
    data = tmp_path / "data"
    readings = tmp_path / "ana.csv"
    readings.write_text(
        "start,end,metric,value,unit,source\n"
        "2026-11-18T06:50:00+01:00,,hrv_rmssd,61,ms,ring\n"
        "2026-11-18T06:50:00+01:00,,resting_hr,52,bpm,ring\n"
    )
    # me: a calendar, readings, a check-in, a cycle (meters, a recommendation, a snapshot),
    # a correction and every kind of token.
    ok(cfg, "import", "ics", CALENDAR)
    ok(cfg, "import", "readings", readings)
    ok(cfg, "checkin", "energy=5", "stress=1")
    ok(cfg, "run", "--once")
    ok(cfg, "classify", "--correct", "Team sync", "DEEP_WORK")
    me_token = ok(cfg, "web-token").strip()
    me_feed = ok(cfg, "calendar-feed").strip()
    ok(cfg, "push-token", "create", "me-phone")
    assert invoke(cfg, "notify-token", answer="me-ntfy-secret\n").exit_code == 0
    assert invoke(cfg, "mqtt-password", answer="me-mqtt-secret\n").exit_code == 0
    me_rec = json.loads(ok(cfg, "recommend", "--json"))
    me_label = ok(cfg, "classify", "Team sync", "--json")
    ok(cfg, "person", "add", "ana")
    before = _own_state(data, database_url, "me")
    assert all(before["rows"][t] for t in ("readings", "calendar_events", "checkins"))
    assert before["secrets"] and before["files"]

    said: list[str] = []
    for command, runs in AS_ANA.items():
        for args in runs:
            filled = [
                str(a).format(calendar=CALENDAR, readings=readings, out=tmp_path / "ana-out")
                for a in args
            ]
            answer = {"notify-token": "ana-ntfy\n", "mqtt-password": "ana-mqtt\n"}.get(command)
            result = invoke(cfg, "--person", "ana", *filled, answer=answer)
            assert result.exit_code == 0, (filled, result.output)
            said.append(result.output)
    # ana answering me's recommendation finds none of hers; a backup is the household's.
    rec_id = me_rec.get("id") or me_rec.get("recommendation_id")
    refused = invoke(cfg, "--person", "ana", "feedback", rec_id, "accept")
    assert refused.exit_code != 0 and str(rec_id) in refused.output
    refused = invoke(cfg, "--person", "ana", "backup", tmp_path / "ana.db")
    assert refused.exit_code == 2 and "every person's data" in refused.output
    assert not (tmp_path / "ana.db").exists()
    assert "wrote" in ok(cfg, "backup", tmp_path / "household.db")  # without --person

    # Nothing of me's changed, and nothing of me's was shown to ana.
    after = _own_state(data, database_url, "me")
    assert after == before
    assert ok(cfg, "--person", "me", "classify", "Team sync", "--json") == me_label
    assert ok(cfg, "--person", "me", "web-token").strip() == me_token
    shown = "\n".join(said) + "".join(
        p.read_text(errors="replace") for p in (tmp_path / "ana-out").rglob("*") if p.is_file()
    )
    for mine in (me_token, me_feed, "me-phone", "me-ntfy-secret", "me-mqtt-secret"):
        assert mine not in shown
    # ana's own things are hers: her calendar and check-in are stored under her name.
    ana = _own_state(data, database_url, "ana")
    assert ana["rows"]["calendar_events"] and ana["rows"]["checkins"]
    assert ana["secrets"] and ana["secrets"] != before["secrets"]
