"""To-dos: VTODO files, stored with their history, and the Progress meter's task inputs."""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import select

from bridge.errors import InputError
from bridge.intake.ingest import import_file
from bridge.store.models import Task, TaskChange
from connectors import ics
from connectors.base import ReadContext, TaskRecord
from mappings.actions import METERS
from mappings.explain import explain_meter
from mappings.meters import MeterRules, compute_slots, load_weights
from mappings.slots import SlotKey
from mappings.tasks import TASK_COLUMNS, TASK_INPUTS
from tests.conftest import BERLIN, SAMPLE
from tests.mappings.test_meters import DAY, events, history
from tests.shared import shared_path

VTODO = shared_path("vtodo")
NOW = datetime(2026, 11, 25, 20, 0, tzinfo=BERLIN)


def _tasks(path: Path, ctx: ReadContext) -> list[TaskRecord]:
    return [r for r in ics.read(path, ctx) if isinstance(r, TaskRecord)]


def vcalendar(*todos: str) -> bytes:
    body = "".join(f"BEGIN:VTODO\r\n{t.strip()}\r\nEND:VTODO\r\n" for t in todos)
    text = f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n{body}END:VCALENDAR\r\n"
    return text.replace("\n", "\r\n").replace("\r\r", "\r").encode()


# --- reading real VTODO files -----------------------------------------------------------


def test_real_vtodo_files_from_public_test_suites(ctx):
    # RFC 5545's yearly-tax example as python-recurring-ical-events ships it: UTC due.
    (tax,) = _tasks(VTODO / "recurring_issue_97_simple_todo.ics", ctx)
    assert tax.uid == "19920901T130000Z-123408@host.com"
    assert tax.title == "Yearly Income Tax Preparation"
    assert tax.priority == 1 and tax.status == "open" and not tax.due_all_day
    assert tax.due == datetime(1992, 5, 16, 4, 59, 59, tzinfo=UTC)
    # icalendar's events-and-todos calendar: both are read, the events unchanged.
    january = ReadContext(tz=BERLIN, now=datetime(2025, 1, 14, tzinfo=BERLIN))
    records = list(ics.read(VTODO / "icalendar_issue_1050_events_and_todos.ics", january))
    titles = {getattr(r, "title", None) for r in records}
    assert {"Test Event 1", "Test Event 2", "Test Todo 1"} <= titles
    # The date/time matrix (with its misspelt END:VTOOD lines): every due form.
    due = {t.uid: t for t in _tasks(VTODO / "recurring_issue_201_test_matrix.ics", ctx)}
    assert len(due) == 15
    # A DATE due is the end of that day in the person's zone.
    assert due["VTODO-DATE-DATE"].due == datetime(2000, 1, 3, tzinfo=BERLIN)
    assert due["VTODO-DATE-DATE"].due_all_day
    # A floating time is local; a UTC time stays UTC.
    assert due["VTODO-DATE-DATETIME"].due == datetime(2000, 1, 2, 4, tzinfo=BERLIN)
    assert due["VTODO-DATE-UTC"].due == datetime(2000, 1, 3, 2, tzinfo=UTC)
    # No DUE: DTSTART + DURATION (from the start of a date DTSTART).
    assert due["VTODO-DATE-DAYS"].due == datetime(2000, 1, 4, tzinfo=BERLIN)
    assert due["VTODO-DATE-HOURS"].due == datetime(2000, 1, 1, 10, tzinfo=BERLIN)


def test_status_completed_percent_priority_and_parent(tmp_path, ctx):
    path = tmp_path / "list.ics"
    path.write_bytes(
        vcalendar(
            "UID:a\nSUMMARY:Done by status\nSTATUS:COMPLETED\nCOMPLETED:20261118T101500Z\n"
            "PERCENT-COMPLETE:100\nCREATED:20261110T080000Z\nDUE;VALUE=DATE:20261118",
            "UID:b\nSUMMARY:Done by time only\nCOMPLETED:20261118T120000Z",
            "UID:c\nSUMMARY:Half way\nSTATUS:IN-PROCESS\nPERCENT-COMPLETE:50\nPRIORITY:5",
            "UID:d\nSUMMARY:Dropped\nSTATUS:CANCELLED",
            "UID:e\nSUMMARY:Sub-task\nRELATED-TO;RELTYPE=PARENT:a",
            "UID:f\nSUMMARY:Sibling only\nRELATED-TO;RELTYPE=SIBLING:a",
        )
    )
    got = {t.uid: t for t in _tasks(path, ctx)}
    assert got["a"].status == "done"
    assert got["a"].completed == datetime(2026, 11, 18, 10, 15, tzinfo=UTC)
    assert got["a"].created == datetime(2026, 11, 10, 8, tzinfo=UTC)
    assert got["a"].percent == 100
    assert got["b"].status == "done"
    assert (got["c"].status, got["c"].percent, got["c"].priority) == ("open", 50, 5)
    assert got["d"].status == "cancelled"
    assert got["e"].parent == "a" and got["f"].parent == ""


# --- storing with history ---------------------------------------------------------------


def _history(store) -> list[tuple[str, str]]:
    with store.session() as s:
        rows = s.execute(
            select(Task.uid, TaskChange.kind)
            .join(Task, Task.id == TaskChange.task_id)
            .order_by(TaskChange.id)
        ).all()
    return [tuple(r) for r in rows]


def test_history_created_completed_reopened_deleted_and_idempotent(store, tmp_path, ctx):
    path = tmp_path / "todo.ics"
    open_ = "UID:t1\nSUMMARY:Write report\nDUE;VALUE=DATE:20261119\nSTATUS:NEEDS-ACTION"
    done = "UID:t1\nSUMMARY:Write report\nDUE;VALUE=DATE:20261119\nSTATUS:COMPLETED\n" + (
        "COMPLETED:20261119T090000Z"
    )
    other = "UID:t2\nSUMMARY:Gym"
    steps = [(open_, other), (done, other), (done, other), (open_, other), (other,)]
    for todos in steps:
        path.write_bytes(vcalendar(*todos))
        import_file(store, "ics", path, ctx, force=True)
    assert _history(store) == [
        ("t1", "created"),
        ("t1", "due"),
        ("t2", "created"),
        ("t1", "completed"),
        ("t1", "uncompleted"),
        ("t1", "deleted"),
    ]
    with store.session() as s:
        t1 = s.execute(select(Task).where(Task.uid == "t1")).scalar_one()
        completed_at = s.execute(
            select(TaskChange.at_utc).where(TaskChange.kind == "completed")
        ).scalar_one()
    assert t1.deleted and t1.status == "open"
    # The completion keeps the time the source gave, so that day's count stays right.
    assert completed_at == datetime(2026, 11, 19, 9, tzinfo=UTC)
    # Back in the file: restored.
    path.write_bytes(vcalendar(open_, other))
    import_file(store, "ics", path, ctx, force=True)
    assert _history(store)[-1] == ("t1", "restored")


def test_bad_todos_are_counted_skips_and_the_rest_is_stored(store, tmp_path, ctx):
    path = tmp_path / "bad.ics"
    path.write_bytes(
        vcalendar(
            "SUMMARY:No uid at all\nDUE;VALUE=DATE:20261120",
            "UID:far\nSUMMARY:Someday\nDUE;VALUE=DATE:99991231",
            "UID:old\nSUMMARY:Ancient\nDUE;VALUE=DATE:00010101",
            "UID:ok\nSUMMARY:Fine\nDUE;VALUE=DATE:20261120",
            "UID:bad-percent\nSUMMARY:Broken\nPERCENT-COMPLETE:250",
            # icalendar refuses this to-do (not an integer); only it is lost, not the file.
            "UID:bad-priority\nSUMMARY:Broken\nPRIORITY:high",
        )
    )
    summary = import_file(store, "ics", path, ctx)
    assert summary.by_type["task"] == 2
    assert summary.skipped["task"] == 4
    assert "4 skipped as unreadable or implausible (task 4)" in summary.line()
    with store.session() as s:
        stored = dict(s.execute(select(Task.uid, Task.percent)).all())
    assert stored == {"ok": None, "bad-percent": 100}  # an impossible percentage is clipped


def test_a_file_icalendar_cannot_parse_stores_nothing(store, tmp_path, ctx):
    path = tmp_path / "broken.ics"
    path.write_bytes(b"BEGIN:VCALENDAR\r\nBEGIN:VTODO\r\nUID:x\r\nDUE:not-a-date\r\n")
    with pytest.raises(InputError, match=r"broken\.ics: "):
        import_file(store, "ics", path, ctx)
    assert store.count(Task) == 0 and store.count(TaskChange) == 0


# --- the meter --------------------------------------------------------------------------


def _frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=TASK_COLUMNS)


def _at(day: date, hour: float) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=BERLIN) + timedelta(hours=hour)


def _end_of(day: date) -> datetime:
    return _at(day + timedelta(days=1), 0)


def _progress(tasks: pd.DataFrame | None, slot: int = 2, weights=None):
    now = _at(DAY, 21)
    (res,) = compute_slots(
        history(),
        events(),
        [SlotKey(DAY, slot)],
        tz=BERLIN,
        now=now,
        tasks=tasks,
        rules=MeterRules(weights=weights),
    )
    return res.meters


def test_without_tasks_every_meter_is_exactly_what_it_was():
    # The weights before task inputs existed: the same file minus them.
    weights = load_weights()
    before = dataclasses.replace(
        weights,
        meters={
            m: {k: w for k, w in table.items() if k not in TASK_INPUTS}
            for m, table in weights.meters.items()
        },
    )
    for slot in range(4):
        now, old = _progress(None, slot), _progress(None, slot, before)
        for m in METERS:
            assert now[m].value == old[m].value
            assert now[m].confidence == old[m].confidence
            assert now[m].provenance.get("inputs") == old[m].provenance.get("inputs")
    # An empty frame (a task source that holds nothing yet) is the same as none.
    assert _progress(_frame([]))["progress"].value == _progress(None)["progress"].value


def _day_of_tasks(done: int, missed: int) -> pd.DataFrame:
    rows = []
    for i in range(done + missed):
        created = _at(DAY - timedelta(days=3), 9)
        rows.append((i, "created", created, _end_of(DAY), f"task {i}", None))
        if i < done:
            rows.append((i, "completed", _at(DAY, 10 + i * 0.1), _end_of(DAY), f"task {i}", None))
    return _frame(rows)


def test_ticking_off_tasks_raises_progress_and_explain_names_them():
    none_done = _progress(_day_of_tasks(0, 10))["progress"]
    all_done = _progress(_day_of_tasks(10, 0))["progress"]
    calendar_only = _progress(None)["progress"]
    assert all_done.value > calendar_only.value > none_done.value
    inputs = {i["name"]: i for i in all_done.provenance["inputs"]}
    assert inputs["tasks_today"]["value"] == 10 and inputs["tasks_today"]["score"] == 1.0
    assert inputs["tasks_today"]["tasks"]["done_today"][0] == "task 9"  # latest first
    lines = "\n".join(explain_meter("progress", all_done.value, 1.0, all_done.provenance))
    assert "tasks_today" in lines and "done today: task 9; task 8" in lines


def test_a_task_reopened_later_still_counts_as_done_on_its_day():
    rows = [
        (1, "created", _at(DAY, 8), _end_of(DAY), "Report", None),
        (1, "completed", _at(DAY, 11), _end_of(DAY), "Report", None),
        (1, "uncompleted", _at(DAY + timedelta(days=2), 9), _end_of(DAY), "Report", None),
    ]
    day = _progress(_frame(rows))["progress"]
    inputs = {i["name"]: i for i in day.provenance["inputs"]}
    assert inputs["tasks_today"]["value"] == 1
    assert inputs["overdue_tasks"]["value"] == 0


def test_overdue_load_and_a_real_due_date_replace_the_guessed_deadline():
    rows = [
        (
            1,
            "created",
            _at(DAY - timedelta(days=9), 9),
            _end_of(DAY - timedelta(days=5)),
            "Taxes",
            None,
        ),
        (
            2,
            "created",
            _at(DAY - timedelta(days=9), 9),
            _end_of(DAY + timedelta(days=3)),
            "Slides",
            None,
        ),
    ]
    progress = _progress(_frame(rows), slot=0)["progress"]
    inputs = {i["name"]: i for i in progress.provenance["inputs"]}
    assert inputs["overdue_tasks"]["value"] == 1
    assert inputs["overdue_tasks"]["tasks"] == {"overdue": ["Taxes"]}
    runway = inputs["deadline_runway"]
    assert runway["unit"] == "days to the next deadline"
    assert runway["tasks"] == {"next_due": ["Slides"]}
    # Slides are due at the end of DAY + 3; the morning slot ends at noon of DAY.
    assert runway["value"] == pytest.approx(3.5, abs=0.01)


def test_a_person_with_only_tasks_gets_a_progress_meter():
    (res,) = compute_slots(
        history().iloc[:0],
        events().iloc[:0],
        [SlotKey(DAY, 3)],
        tz=BERLIN,
        now=_at(DAY, 23),
        tasks=_day_of_tasks(3, 1),
    )
    assert res.meters["progress"].value is not None
    assert res.meters["connection"].value is None


# --- end to end through the CLI ---------------------------------------------------------


@pytest.mark.sqlite_only  # the demo keeps its own SQLite store; the PostgreSQL run's env points elsewhere
def test_demo_tasks_feed_progress_and_meters_explain_shows_them(tmp_path):
    from typer.testing import CliRunner

    from bridge.cli.main import app

    data = tmp_path / "demo"
    runner = CliRunner()
    result = runner.invoke(app, ["demo", "--data-dir", str(data)])
    assert result.exit_code == 0, result.output
    assert "imported tasks.ics: 45 records, 45 new" in result.output
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'timezone = "Europe/Berlin"\ndata_dir = "{data}"\n')
    shown = runner.invoke(
        app, ["--config", str(cfg), "meters", "--date", "2026-11-19", "--slot", "0", "--explain"]
    )
    assert shown.exit_code == 0, shown.output
    assert "tasks_week" in shown.output and "tasks done, past 7 days" in shown.output
    assert "due today: Write weekly update" in shown.output


def test_sample_tasks_are_what_the_generator_writes():
    from bridge.sample_data.generate import tasks_ics

    assert (SAMPLE / "tasks.ics").read_bytes() == tasks_ics()


# --- the classifier and the observation -------------------------------------------------


def test_task_titles_are_labelled_and_due_tasks_join_the_observation(
    store, settings, tmp_path, ctx
):
    from bridge.cycle.recommend import observation_for
    from bridge.cycle.tasks import classify_tasks
    from bridge.runner.prompt import build_prompt

    path = tmp_path / "todo.ics"
    path.write_bytes(
        vcalendar(
            "UID:gym\nSUMMARY:Gym\nDUE;TZID=Europe/Berlin:20261119T180000",
            "UID:tax\nSUMMARY:File taxes\nDUE;VALUE=DATE:20261110",
            "UID:done\nSUMMARY:Read chapter of Python book\nSTATUS:COMPLETED",
        )
    )
    import_file(store, "ics", path, ctx)
    assert classify_tasks(store, settings) == 3
    assert classify_tasks(store, settings) == 0  # nothing changed: nothing relabelled
    with store.session() as s:
        actions = dict(s.execute(select(Task.uid, Task.action)).all())
    assert actions["gym"] == "EXERCISE"
    assert actions["tax"] == "ADMIN_WORK"
    evening = SlotKey(date(2026, 11, 19), 2)  # 17:00-22:00 in Berlin
    obs = observation_for(store, settings, evening, ctx.now)
    assert obs["tasks_due"] == [
        {"title": "Gym", "action": "EXERCISE", "due": "2026-11-19T17:00:00+00:00"}
    ]
    assert obs["tasks_overdue"] == 1
    prompt = build_prompt(obs, [])
    assert "tasks due in this slot: EXERCISE, 1 overdue" in prompt
    assert "Gym" not in prompt and "taxes" not in prompt  # titles never leave the machine


def test_without_tasks_the_observation_is_what_it_was(store, settings, ctx):
    from bridge.cycle.recommend import observation_for

    obs = observation_for(store, settings, SlotKey(date(2026, 11, 19), 2), ctx.now)
    assert "tasks_due" not in obs and "tasks_overdue" not in obs


def test_a_changed_task_recomputes_only_from_its_first_day_and_equals_a_full_run(
    store, settings, ctx, tmp_path
):
    from bridge.cycle.meters import recompute_meters
    from tests.cycle.test_meter_recompute import load_sample, snapshots

    load_sample(store, ctx)
    todo = tmp_path / "todo.ics"
    old = "UID:old\nSUMMARY:Old chore\nCREATED:20261020T080000Z\nDUE;VALUE=DATE:20261021"
    new = "UID:new\nSUMMARY:Slides\nCREATED:20261117T080000Z\nDUE;VALUE=DATE:20261119"
    todo.write_bytes(vcalendar(old, new))
    import_file(store, "ics", todo, ctx)
    recompute_meters(store, settings, ctx.now)
    before = snapshots(store)
    # Slides ticked off: slots from its first day (the 17th) on may move, none before.
    done = new + "\nSTATUS:COMPLETED\nCOMPLETED:20261119T070000Z"
    todo.write_bytes(vcalendar(old, done))
    import_file(store, "ics", todo, ctx)
    computed = recompute_meters(store, settings, ctx.now)
    incremental = snapshots(store)
    assert 0 < computed < len(before)
    changed = [k for k in incremental if incremental[k] != before.get(k)]
    assert changed and min(changed)[0] >= date(2026, 11, 16)
    recompute_meters(store, settings, ctx.now, full=True)
    assert snapshots(store) == incremental


def test_a_big_todo_feed_is_read_a_batch_at_a_time(tmp_path, ctx):
    import tracemalloc

    from benchmarks.tasks_import import write_feed

    path = tmp_path / "big.ics"
    write_feed(path, 4_000, changed=False)
    size = path.stat().st_size
    tracemalloc.start()
    try:
        count = sum(1 for r in ics.read(path, ctx) if isinstance(r, TaskRecord))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 4_000
    # The bytes and one parsed batch of 256 KB of to-dos (13 MB measured), not 4,000
    # parsed at once (a whole parsed calendar: 26 MB measured).
    assert peak < 3 * size + (16 << 20), peak


def test_a_bad_todo_loses_neither_the_other_todos_nor_the_events(tmp_path, ctx):
    path = tmp_path / "mixed.ics"
    path.write_bytes(
        b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\n"
        b"BEGIN:VEVENT\r\nUID:e1\r\nSUMMARY:Standup\r\nDTSTART:20261119T083000Z\r\n"
        b"DTEND:20261119T084500Z\r\nEND:VEVENT\r\n"
        b"BEGIN:VTODO\r\nUID:bad\r\nPRIORITY:high\r\nEND:VTODO\r\n"
        b"BEGIN:VTODO\r\nUID:good\r\nSUMMARY:Fine\r\nEND:VTODO\r\n"
        b"END:VCALENDAR\r\n"
    )
    records = list(ics.read(path, ctx))
    assert [r.title for r in records if isinstance(r, ics.EventRecord)] == ["Standup"]
    assert [r.uid for r in records if isinstance(r, TaskRecord)] == ["good"]
    (scope,) = [r for r in records if type(r).__name__ == "TaskScope"]
    assert scope.keep == {"bad"}  # listed but unreadable: not deleted
