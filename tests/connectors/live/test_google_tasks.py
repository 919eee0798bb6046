"""Google Tasks through HttpMockSequence: lists, paging, hidden/deleted/reopened, vanished lists.

Answers follow the documented shapes of tasklists.list and tasks.list (kind, etag,
nextPageToken, items of tasks#taskList / tasks#task; `due` as that day's UTC midnight,
`completed` and `updated` as RFC 3339 with milliseconds, `deleted`/`hidden` booleans).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

import httplib2
import pytest
from googleapiclient.http import HttpMockSequence
from sqlalchemy import select

from bridge.auth.secrets import Secrets
from bridge.config import Settings
from bridge.intake.connect import auth_status
from bridge.intake.live import load_cursors
from bridge.intake.sources import run_source
from bridge.store import Store
from bridge.store.models import Task, TaskChange
from connectors.base import ReadContext
from connectors.google_calendar import TOKEN_SECRET
from connectors.google_tasks import SCOPE, due_instant
from tests.conftest import BERLIN

NOW = datetime(2026, 11, 19, 8, 40, tzinfo=BERLIN)
OK = {"status": "200", "content-type": "application/json; charset=UTF-8"}
WORK, HOME = "MDk2NTQ2NDYzNDgzNTI1MTc2NTc6MDow", "UlRMbV9PTFpsT2J4NjR0Rw"


@pytest.fixture
def tsettings(live_settings: Settings) -> Settings:
    return live_settings.model_copy(
        update={
            "sources": live_settings.sources.model_copy(
                update={
                    "google_tasks": live_settings.sources.google_tasks.model_copy(
                        update={"enabled": True}
                    )
                }
            )
        }
    )


@pytest.fixture
def tstore(tsettings: Settings):
    s = Store(tsettings.database_url)
    yield s
    s.dispose()


@pytest.fixture
def ctx() -> ReadContext:
    return ReadContext(tz=BERLIN, now=NOW)


def _creds(secrets: Secrets, *, tasks: bool = True) -> None:
    scopes = ["https://www.googleapis.com/auth/calendar.readonly"] + ([SCOPE] if tasks else [])
    secrets.set_json(
        TOKEN_SECRET,
        {
            "token": "ya29.google-access-token-value",
            "refresh_token": "1//google-refresh-token-value",
            "token_uri": "https://oauth2.googleapis.com/token",
            "client_id": "1234-abc.apps.googleusercontent.com",
            "client_secret": "GOCSPX-google-client-secret-value",
            "scopes": scopes,
            "expiry": (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        },
    )


def _json(body: dict[str, Any], status: str = "200") -> tuple:
    return ({**OK, "status": status}, json.dumps(body))


def _lists(*ids: str, next_page: str = "") -> tuple:
    body: dict[str, Any] = {
        "kind": "tasks#taskLists",
        "etag": '"LTE4NjQ0NTIyNzI"',
        "items": [
            {
                "kind": "tasks#taskList",
                "id": i,
                "etag": '"LTE4NjQ0NTIyNzI"',
                "title": "My Tasks" if i == WORK else "Home",
                "updated": "2026-11-18T07:12:44.251Z",
                "selfLink": f"https://www.googleapis.com/tasks/v1/users/@me/lists/{i}",
            }
            for i in ids
        ],
    }
    if next_page:
        body["nextPageToken"] = next_page
    return _json(body)


def _task(tid: str, title: str, updated: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "tasks#task",
        "id": tid,
        "etag": '"MTA3NjU0MzIxMA"',
        "title": title,
        "updated": updated,
        "selfLink": f"https://www.googleapis.com/tasks/v1/lists/{WORK}/tasks/{tid}",
        "position": "00000000000000000001",
        "status": "needsAction",
        "links": [],
        "webViewLink": f"https://tasks.google.com/task/{tid}",
        **extra,
    }


def _tasks(items: list[dict[str, Any]], next_page: str = "") -> tuple:
    body: dict[str, Any] = {"kind": "tasks#tasks", "etag": '"LTIxMzM4NjE4MTU"', "items": items}
    if next_page:
        body["nextPageToken"] = next_page
    return _json(body)


def _serve(monkeypatch: pytest.MonkeyPatch, responses: list[tuple]) -> HttpMockSequence:
    mock = HttpMockSequence(responses)
    monkeypatch.setattr(httplib2, "Http", lambda *a, **k: mock)
    return mock


def _query(uri: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(uri).query)


def _stored(store: Store) -> dict[str, Task]:
    with store.session() as session:
        return {t.uid: t for t in session.execute(select(Task)).scalars()}


def _kinds(store: Store, uid: str) -> list[str]:
    with store.session() as session:
        return list(
            session.execute(
                select(TaskChange.kind)
                .join(Task, Task.id == TaskChange.task_id)
                .where(Task.uid == uid)
                .order_by(TaskChange.id)
            ).scalars()
        )


REPORT = _task(
    "report",
    "Write quarterly report",
    "2026-11-18T16:02:10.000Z",
    due="2026-11-19T00:00:00.000Z",
)
GYM = _task(
    "gym",
    "Gym",
    "2026-11-18T19:30:00.000Z",
    status="completed",
    completed="2026-11-18T19:29:58.000Z",
    hidden=True,  # completed in Google's own app, then cleared
    due="2026-11-18T00:00:00.000Z",
)
SUB = _task("sub", "Collect receipts", "2026-11-17T10:00:00.000Z", parent="report")
OLD = _task("old", "Cancelled idea", "2026-11-16T10:00:00.000Z", deleted=True)
GROCERIES = _task("groceries", "Buy groceries", "2026-11-18T12:00:00.000Z")


def _full(monkeypatch, secrets, tstore, tsettings, ctx) -> HttpMockSequence:
    _creds(secrets)
    mock = _serve(
        monkeypatch,
        [
            _lists(WORK, next_page="lists-2"),
            _lists(HOME),
            _tasks([REPORT, GYM], next_page="tasks-2"),
            _tasks([SUB, OLD]),
            _tasks([GROCERIES]),
        ],
    )
    outcome = run_source(tstore, tsettings, "google_tasks", ctx)
    assert outcome.status == "ok", outcome.error
    return mock


def test_full_sync_follows_every_page_of_every_list(monkeypatch, secrets, tstore, tsettings, ctx):
    mock = _full(monkeypatch, secrets, tstore, tsettings, ctx)
    uris = [r[0] for r in mock.request_sequence]
    assert len(uris) == 5
    assert uris[0].startswith("https://tasks.googleapis.com/tasks/v1/users/@me/lists")
    assert _query(uris[1])["pageToken"] == ["lists-2"]
    first = _query(uris[2])
    assert f"/tasks/v1/lists/{WORK}/tasks" in uris[2]
    assert first["showCompleted"] == ["true"] and first["showHidden"] == ["true"]
    assert first["showDeleted"] == ["true"] and first["maxResults"] == ["100"]
    assert "updatedMin" not in first
    assert _query(uris[3])["pageToken"] == ["tasks-2"]
    assert f"/tasks/v1/lists/{HOME}/tasks" in uris[4]
    tasks = _stored(tstore)
    assert set(tasks) == {"report", "gym", "sub", "old", "groceries"}
    # Due: the date part of Google's UTC midnight, due until the end of that Berlin day.
    assert tasks["report"].due_utc == datetime(2026, 11, 19, 23, 0, tzinfo=UTC)
    assert tasks["report"].due_all_day and tasks["report"].status == "open"
    gym = tasks["gym"]
    assert gym.status == "done" and gym.completed_utc == datetime(
        2026, 11, 18, 19, 29, 58, tzinfo=UTC
    )
    assert tasks["sub"].parent == "report"
    assert tasks["old"].deleted and tasks["groceries"].list_id == HOME
    assert _kinds(tstore, "gym") == ["created", "due", "completed"]
    assert load_cursors(tstore, "google_tasks") == {
        ("tasks", WORK): json.dumps({"updated_min": "2026-11-18T19:30:00.000Z"}),
        ("tasks", HOME): json.dumps({"updated_min": "2026-11-18T12:00:00.000Z"}),
    }


def test_incremental_pull_applies_reopened_and_deleted_tasks(
    monkeypatch, secrets, tstore, tsettings, ctx
):
    _full(monkeypatch, secrets, tstore, tsettings, ctx)
    reopened = {**GYM, "status": "needsAction", "updated": "2026-11-19T07:00:00.000Z"}
    reopened.pop("completed")
    reopened.pop("hidden")
    deleted = {**GROCERIES, "deleted": True, "updated": "2026-11-19T07:05:00.000Z"}
    mock = _serve(monkeypatch, [_lists(WORK, HOME), _tasks([reopened]), _tasks([deleted])])
    outcome = run_source(tstore, tsettings, "google_tasks", ctx)
    assert outcome.status == "ok", outcome.error
    work = _query(mock.request_sequence[1][0])
    assert work["updatedMin"] == ["2026-11-18T19:30:00.000Z"]
    tasks = _stored(tstore)
    assert tasks["gym"].status == "open" and tasks["groceries"].deleted
    # An incremental answer is not the whole list: the others are untouched.
    assert not tasks["report"].deleted and not tasks["sub"].deleted
    assert _kinds(tstore, "gym") == ["created", "due", "completed", "uncompleted"]
    assert _kinds(tstore, "groceries") == ["created", "deleted"]
    # The same answer again changes nothing.
    _serve(monkeypatch, [_lists(WORK, HOME), _tasks([reopened]), _tasks([deleted])])
    again = run_source(tstore, tsettings, "google_tasks", ctx)
    assert again.new == 0
    assert _kinds(tstore, "gym") == ["created", "due", "completed", "uncompleted"]


def test_a_list_deleted_in_google_tasks_deletes_its_tasks(
    monkeypatch, secrets, tstore, tsettings, ctx
):
    _full(monkeypatch, secrets, tstore, tsettings, ctx)
    _serve(monkeypatch, [_lists(WORK), _tasks([])])
    outcome = run_source(tstore, tsettings, "google_tasks", ctx)
    assert outcome.status == "ok", outcome.error
    assert _stored(tstore)["groceries"].deleted
    assert load_cursors(tstore, "google_tasks")[("tasks", HOME)] is None  # dropped
    assert not _stored(tstore)["report"].deleted


def test_a_chosen_list_that_vanished_is_one_line_and_the_others_are_stored(
    monkeypatch, secrets, tstore, tsettings, ctx
):
    _creds(secrets)
    cfg = tsettings.sources.google_tasks.model_copy(update={"lists": ["gone-list", HOME]})
    chosen = tsettings.model_copy(
        update={"sources": tsettings.sources.model_copy(update={"google_tasks": cfg})}
    )
    not_found = {"error": {"code": 404, "message": "Not Found", "errors": [{"reason": "notFound"}]}}
    _serve(monkeypatch, [_json(not_found, "404"), _tasks([GROCERIES])])
    outcome = run_source(tstore, chosen, "google_tasks", ctx)
    assert outcome.status == "error"
    assert "task list gone-list not found (deleted?); check [sources.google_tasks] lists" in (
        outcome.error or ""
    )
    assert "\n" not in (outcome.error or "")
    assert set(_stored(tstore)) == {"groceries"}


def test_bad_tasks_are_counted_skips(monkeypatch, secrets, tstore, tsettings, ctx):
    _creds(secrets)
    absurd = _task("far", "Someday", "2026-11-18T10:00:00.000Z", due="9999-12-31T00:00:00.000Z")
    broken = _task("broken", "Broken", "2026-11-18T10:00:00.000Z", due="next tuesday")
    _serve(monkeypatch, [_lists(WORK), _tasks([absurd, broken, REPORT, "not a task"])])
    outcome = run_source(tstore, tsettings, "google_tasks", ctx)
    assert outcome.status == "ok", outcome.error
    assert outcome.skipped == 3
    assert set(_stored(tstore)) == {"report"}


def test_a_calendar_only_token_keeps_calendar_and_says_how_to_add_tasks(
    monkeypatch, secrets, tstore, tsettings, ctx
):
    _creds(secrets, tasks=False)
    outcome = run_source(tstore, tsettings, "google_tasks", ctx)
    assert outcome.status == "reauth_required"
    assert "rhythm-bridge auth google --tasks" in (outcome.error or "")
    rows = {r["source"]: r for r in auth_status(tsettings, secrets, tstore)["sources"]}
    assert rows["google_calendar"]["credentials_stored"]
    assert not rows["google_tasks"]["credentials_stored"]
    assert rows["google_tasks"]["command"] == "rhythm-bridge auth google --tasks"


def test_a_due_date_is_the_day_google_shows_in_any_zone():
    for zone in ("Pacific/Honolulu", "Europe/Berlin", "Pacific/Kiritimati"):
        tz = ZoneInfo(zone)
        due = due_instant("2026-11-25T00:00:00.000Z", ReadContext(tz=tz, now=NOW))
        # Due until the end of the 25th where the person is, never the 24th or 26th.
        assert due.astimezone(tz) == datetime(2026, 11, 26, tzinfo=tz)
        assert (due - timedelta(seconds=1)).astimezone(tz).day == 25


def test_google_tasks_feed_progress_end_to_end(monkeypatch, secrets, tstore, tsettings, ctx):
    from bridge.cycle.meters import recompute_meters
    from tests.helpers import meter_snapshot

    _full(monkeypatch, secrets, tstore, tsettings, ctx)
    recompute_meters(tstore, tsettings, NOW)
    snap = meter_snapshot(tstore, NOW.date(), 0)
    progress = json.loads(snap.provenance)["progress"]
    inputs = {i["name"]: i for i in progress["inputs"]}
    # Only tasks are known: Progress comes from them alone.
    assert snap.progress is not None
    assert inputs["tasks_today"]["tasks"]["due_today"] == ["Write quarterly report"]
    assert inputs["tasks_week"]["value"] == 1  # the gym session ticked off yesterday
