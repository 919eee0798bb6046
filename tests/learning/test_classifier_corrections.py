"""Corrections: stored, winning from then on, relabelling stored events, feeding a retrain;
and the classifier in the daemon cycle and the CLI."""

import json

import pytest
import respx
from sqlalchemy import select
from typer.testing import CliRunner

from bridge.cli.core import state as _state
from bridge.cli.main import app
from bridge.cycle.classify import (
    build_classifier,
    classify_events,
    local_model_path,
    retrain_if_corrected,
)
from bridge.errors import InputError
from bridge.intake.ingest import import_file
from bridge.learning.corrections import add_correction, corrections
from bridge.store.models import CalendarEvent, ClassifierCorrection, LLMAnswer
from mappings.classifier_model import load
from tests.conftest import SAMPLE
from tests.helpers import write_config

ICS = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//test//EN
BEGIN:VEVENT
UID:blorp-1@test
DTSTAMP:20261101T000000Z
DTSTART:20261118T170000Z
DTEND:20261118T172000Z
SUMMARY:Blorp
END:VEVENT
END:VCALENDAR
"""


def _labels(store) -> dict[str, tuple]:
    with store.session() as s:
        rows = s.execute(select(CalendarEvent)).scalars()
        return {r.title: (r.action, r.action_layer) for r in rows}


def test_a_correction_wins_from_then_on_and_is_idempotent(store, settings):
    assert build_classifier(settings, store).classify("Gym - 7am").action == "EXERCISE"
    fix = add_correction(store, "Gym - 7am", "sleep")
    assert (fix.pattern, fix.action) == ("gym - #am", "SLEEP")
    result = build_classifier(settings, store).classify("gym - 6am")
    assert (result.action, result.confidence, result.layer) == ("SLEEP", 1.0, "override")
    add_correction(store, "Gym - 7am", "SLEEP")
    add_correction(store, "GYM - 9am", "ME_TIME", channel="web")  # same pattern: replaced
    [row] = corrections(store)
    assert (row.action, row.channel, row.title) == ("ME_TIME", "web", "GYM - 9am")


def test_a_wildcard_correction_through_the_library(store, settings):
    fix = add_correction(store, "🧠 Standup *", "SOCIALIZE")
    assert fix.pattern == "standup *"
    clf = build_classifier(settings, store)
    assert clf.classify("Standup with design").layer == "override"
    assert clf.classify("Team standup").layer == "rules"


@pytest.mark.parametrize(
    ("title", "action", "needle"),
    [("Gym", "NAP", "unknown action 'NAP'"), ("  ?! ", "SLEEP", "at least one letter")],
)
def test_a_bad_correction_is_refused_with_one_line(store, title, action, needle):
    with pytest.raises(InputError, match=needle):
        add_correction(store, title, action)
    assert store.count(ClassifierCorrection) == 0


def test_the_cycle_relabels_stored_events_after_a_correction(store, settings, ctx):
    import_file(store, "ics", SAMPLE / "calendar.ics", ctx)
    first = classify_events(store, settings)
    assert first == store.count(CalendarEvent)
    assert classify_events(store, settings) == 0
    labels = _labels(store)
    assert labels["Team standup"] == ("ADMIN_WORK", "rules")
    assert labels["Reformation Day (holiday)"][0] == "NOT_AN_ACTION"

    add_correction(store, "Team standup", "SOCIALIZE")
    with store.session() as s:
        standups = s.execute(select(CalendarEvent).where(CalendarEvent.title == "Team standup"))
        n = len(standups.scalars().all())
    assert classify_events(store, settings) == n  # only the corrected events change
    assert _labels(store)["Team standup"] == ("SOCIALIZE", "override")
    assert classify_events(store, settings) == 0
    # the correction fed a retrain of the local model
    local = load(local_model_path(settings))
    assert local.meta["corrections"] == 1
    assert retrain_if_corrected(settings, store) is False


@respx.mock
def test_the_cycle_asks_the_llm_only_for_what_the_layers_do_not_know(
    store, settings, ctx, tmp_path
):
    route = respx.post("http://localhost:11434/api/chat").respond(
        json={
            "model": "llama3.2",
            "created_at": "2026-11-22T08:00:00Z",
            "message": {
                "role": "assistant",
                "content": '{"action": "SOCIALIZE", "confidence": 0.8}',
            },
            "done": True,
        }
    )
    path = tmp_path / "blorp.ics"
    path.write_text(ICS)
    import_file(store, "ics", path, ctx)
    import_file(store, "ics", SAMPLE / "calendar.ics", ctx)
    data = settings.model_dump()
    data["classifier"].update(llm_endpoint="http://localhost:11434", llm_model="llama3.2")
    cfg = type(settings).model_validate(data)
    # Twenty minutes nobody else attends: its shape says nothing, so the LLM is asked.
    classify_events(store, cfg)
    assert _labels(store)["Blorp"] == ("SOCIALIZE", "llm")
    assert route.call_count == 1 and store.count(LLMAnswer) == 1
    assert classify_events(store, cfg) == 0 and route.call_count == 1


# --- CLI ----------------------------------------------------------------------------------


@pytest.fixture
def cli():
    _state.clear()
    yield CliRunner()
    if _state.get("store") is not None:
        _state["store"].dispose()
    _state.clear()


def run(cli, cfg, *args, input=None):
    _state.clear()
    return cli.invoke(app, ["--config", str(cfg), *map(str, args)], input=input)


def test_cli_correct_then_classify(cli, tmp_path):
    cfg = write_config(tmp_path / "c.toml", tmp_path / "data")
    stored = run(cli, cfg, "classify", "--correct", "Gym - 7am", "SLEEP")
    assert stored.exit_code == 0 and "SLEEP" in stored.output
    one = json.loads(run(cli, cfg, "classify", "Gym - 8am", "--json").output)
    assert one == {"title": "Gym - 8am", "action": "SLEEP", "confidence": 1.0, "layer": "override"}
    bad = run(cli, cfg, "classify", "--correct", "Gym", "NAP")
    assert bad.exit_code == 2 and "unknown action 'NAP'" in bad.output
    gone = run(cli, cfg, "classify", "--forget", "GYM - 10am")
    assert gone.exit_code == 0 and "correction removed" in gone.output
    back = json.loads(run(cli, cfg, "classify", "Gym - 8am", "--json").output)
    assert back["layer"] == "rules"
    assert "no correction stored" in run(cli, cfg, "classify", "--forget", "Gym - 8am").output
    missing = run(cli, cfg, "classify", "--correct", "Gym")
    assert missing.exit_code == 2 and "--correct needs an ACTION" in missing.output


def test_cli_batch_keeps_order_and_names_the_layer(cli, tmp_path):
    cfg = write_config(tmp_path / "c.toml", tmp_path / "data")
    out = run(cli, cfg, "classify", input="Team standup\nSquash with Ben\nZorblax\n").output
    lines = [json.loads(x) for x in out.splitlines()]
    assert [(x["title"], x["action"], x["layer"]) for x in lines] == [
        ("Team standup", "ADMIN_WORK", "rules"),
        ("Squash with Ben", "EXERCISE", "model"),
        ("Zorblax", "UNCLASSIFIED", "none"),
    ]


@respx.mock(assert_all_called=False)
def test_cli_dry_run_shows_the_request_and_sends_nothing(cli, tmp_path, respx_mock):
    cfg = write_config(
        tmp_path / "c.toml",
        tmp_path / "data",
        llm='[classifier]\nllm_endpoint = "http://localhost:11434"\nllm_model = "llama3.2"',
    )
    result = run(cli, cfg, "classify", "Zorblax", "--dry-run")
    assert result.exit_code == 0 and respx_mock.calls.call_count == 0
    assert "UNCLASSIFIED" in result.output
    assert "would POST to http://localhost:11434/api/chat" in result.output
    assert '"title\\": \\"Zorblax\\"' in result.output


def test_cli_train_classifier_with_corrections(cli, tmp_path):
    cfg = write_config(tmp_path / "c.toml", tmp_path / "data")
    run(cli, cfg, "classify", "--correct", "Zorblax", "ME_TIME")
    out = tmp_path / "model.npz"
    result = run(cli, cfg, "train-classifier", "--out", out)
    assert result.exit_code == 0 and "+ 1 corrections" in result.output
    assert load(out).meta["corrections"] == 1


@pytest.mark.parametrize(
    ("section", "needle"),
    [
        ('rules_file = "{bad}"', "classifier.rules_file: "),
        ('model_file = "{bad}"', "classifier.model_file: "),
        ('llm_endpoint = "http://localhost:11434"', "classifier.llm_model: set the model"),
    ],
)
def test_cli_a_bad_classifier_setting_is_one_line(cli, tmp_path, section, needle):
    bad = tmp_path / "broken"
    bad.write_text("[[rule]\n")
    body = "[classifier]\n" + section.format(bad=bad)
    cfg = write_config(tmp_path / "c.toml", tmp_path / "data", c=body)
    result = run(cli, cfg, "classify", "Gym")
    assert result.exit_code == 2
    assert needle in result.output and len(result.output.strip().splitlines()) == 1
