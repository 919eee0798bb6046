"""Google Tasks API v1: every task list (or the chosen ones), incremental by `updatedMin`.

Uses the Google Calendar connection's OAuth token, which must include the read-only tasks
scope (`rhythm-bridge auth google --tasks`); a Calendar-only token keeps Calendar working
and makes this source say how to add Tasks.

The first pull of a list (or a backfill) lists every task, completed, hidden and deleted
ones included, and is the whole truth of that list: stored tasks it lacks are deleted.
Later pulls ask only for tasks updated since the newest `updated` seen (the server's
clock, so the person's clock does not matter); deleted tasks come back with
`deleted: true`. A list that vanishes from the account has all its tasks deleted.

Due dates: the API keeps only a date and sends it as that day's UTC midnight
("2026-11-25T00:00:00.000Z"), whatever the person's zone. The date part is the due day
as the person set it, so it is read as that calendar date, not converted: the deadline
is the end of that day in the person's zone (a task due on the 25th in New York is due
until midnight between the 25th and 26th there, not on the 24th at 19:00).
"""

from __future__ import annotations

import json
import logging
from datetime import date, datetime, timedelta
from typing import Any

from bridge.auth.secrets import Secrets, quiet_secret_loggers
from bridge.config import Settings
from bridge.errors import AuthExpired, NotConnected, RateLimited, SourceError, Transient
from connectors.base import ReadContext, Skipped, TaskRecord, TaskScope
from connectors.google_calendar import execute, google_service
from connectors.http import RETRY_NEXT_SYNC, RetryPolicy
from connectors.live import (
    MALFORMED,
    Cursors,
    Progress,
    PullResult,
    no_progress,
    normalize,
    page_items,
    parse_instant,
)
from connectors.registry import auth_command

quiet_secret_loggers()

log = logging.getLogger("rhythm_bridge.google_tasks")

SOURCE = "google_tasks"
SCOPE = "https://www.googleapis.com/auth/tasks.readonly"
STREAM = "tasks"
PAGE_SIZE = 100  # the API's maximum for both tasklists.list and tasks.list
ADD_TASKS = "run `rhythm-bridge auth google --tasks` to add read-only Google Tasks access"


def has_tasks_scope(info: dict[str, Any] | None) -> bool:
    """Whether a stored Google token covers Tasks (older tokens: Calendar only)."""
    scopes = (info or {}).get("scopes") or []
    if isinstance(scopes, str):
        scopes = scopes.split()
    return SCOPE in scopes or "https://www.googleapis.com/auth/tasks" in scopes


def due_instant(text: str, ctx: ReadContext) -> datetime:
    """'2026-11-25T00:00:00.000Z' -> the end of 2026-11-25 in the person's zone."""
    day = date.fromisoformat(text[:10])
    return datetime(day.year, day.month, day.day, tzinfo=ctx.tz) + timedelta(days=1)


def _text(doc: dict[str, Any], key: str) -> str:
    value = doc.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"{key} is a {type(value).__name__}, not text")
    return value


def task_record(list_id: str, item: dict[str, Any], ctx: ReadContext) -> list[Any]:
    uid = _text(item, "id")
    if not uid:
        raise KeyError("id")
    done = _text(item, "status") == "completed"
    due = _text(item, "due")
    completed = _text(item, "completed")
    deleted = item.get("deleted", False)
    if not isinstance(deleted, bool):
        raise TypeError("deleted is not a boolean")
    return [
        TaskRecord(
            list_id=list_id,
            uid=uid,
            title=_text(item, "title").strip(),
            status="done" if done else "open",
            due=due_instant(due, ctx) if due else None,
            due_all_day=bool(due),
            completed=parse_instant(completed) if done and completed else None,
            deleted=deleted,
            parent=_text(item, "parent"),
        )
    ]


def _pages(
    method: Any, params: dict[str, Any], policy: RetryPolicy, what: str, not_found: str
) -> list[Any]:
    """Every item of a paged list call (nextPageToken followed to the end)."""
    items: list[Any] = []
    token = None
    while True:
        page = execute(
            method(**params, pageToken=token) if token else method(**params),
            policy,
            what,
            source=SOURCE,
            not_found=not_found,
        )
        items.extend(page_items(page, "items", what))
        token = page.get("nextPageToken")
        if not token:
            return items
        if not isinstance(token, str):
            raise SourceError(f"{what}: nextPageToken is not text; {RETRY_NEXT_SYNC}")


def pull(
    settings: Settings,
    secrets: Secrets,
    ctx: ReadContext,
    cursors: Cursors,
    *,
    since: datetime | None = None,
    progress: Progress = no_progress,
    http: Any = None,
) -> PullResult:
    """Sync every task list (or the configured ones)."""
    from connectors.google_calendar import TOKEN_SECRET

    cfg = settings.sources.google_tasks
    if not has_tasks_scope(secrets.get_json(TOKEN_SECRET)):
        if secrets.get_json(TOKEN_SECRET) is None:
            raise NotConnected(SOURCE, command=auth_command(SOURCE))
        raise AuthExpired(
            SOURCE,
            f"the Google authorization covers Calendar only; {ADD_TASKS}",
            command=auth_command(SOURCE),
        )
    policy = RetryPolicy.from_settings(settings)
    with google_service(settings, secrets, "tasks", "v1", cfg.api_base_url, http=http) as service:
        result = PullResult()
        known = {part for (stream, part), cursor in cursors.items() if stream == STREAM and cursor}
        if cfg.lists:
            lists = list(cfg.lists)
        else:
            found = _pages(
                service.tasklists().list,
                {"maxResults": PAGE_SIZE},
                policy,
                "google tasklists",
                "the task lists were not found",
            )
            lists = [x["id"] for x in found if isinstance(x, dict) and isinstance(x.get("id"), str)]
            for gone in sorted(known - set(lists)):
                # Deleted in Google Tasks: its tasks are gone too, and so is its cursor.
                log.info("%s: task list %s no longer exists; its tasks are deleted", SOURCE, gone)
                result.records.append(TaskScope(gone))
                result.cursors[(STREAM, gone)] = None
        for list_id in lists:
            try:
                _sync_list(
                    service,
                    list_id,
                    cursors=cursors,
                    since=since,
                    ctx=ctx,
                    policy=policy,
                    progress=progress,
                    result=result,
                )
            except (AuthExpired, RateLimited, Transient):
                raise
            except SourceError as err:
                result.errors.append(str(err))  # one vanished list does not stop the others
    return result


def _sync_list(
    service: Any,
    list_id: str,
    *,
    cursors: Cursors,
    since: datetime | None,
    ctx: ReadContext,
    policy: RetryPolicy,
    progress: Progress,
    result: PullResult,
) -> None:
    cursor = None if since else cursors.get((STREAM, list_id))
    updated_min = json.loads(cursor).get("updated_min") if cursor else None
    params: dict[str, Any] = {
        "tasklist": list_id,
        "maxResults": PAGE_SIZE,
        "showCompleted": True,
        "showHidden": True,  # tasks completed in Google's own apps are hidden
        "showDeleted": True,
    }
    if updated_min:
        params["updatedMin"] = updated_min
    what = f"google tasks list {list_id}"
    items = _pages(
        service.tasks().list,
        params,
        policy,
        what,
        f"task list {list_id} not found (deleted?); check [sources.google_tasks] lists",
    )
    progress(list_id, len(items))
    newest = updated_min or ""
    unreadable: set[str] = set()
    for item in items:
        for rec in normalize(SOURCE, "task", [item], lambda x: task_record(list_id, x, ctx)):
            result.records.append(rec)
            if isinstance(rec, Skipped) and isinstance(item, dict) and item.get("id"):
                unreadable.add(str(item["id"]))
        stamp = item.get("updated") if isinstance(item, dict) else None
        if isinstance(stamp, str) and stamp > newest:
            try:
                parse_instant(stamp)
                newest = stamp
            except MALFORMED:
                pass
    if not updated_min:
        result.records.append(TaskScope(list_id, frozenset(unreadable)))
    # Stored even when empty: it marks the list as synced, so its disappearance is seen.
    result.cursors[(STREAM, list_id)] = json.dumps({"updated_min": newest})
