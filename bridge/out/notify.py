"""Telling the person about a new recommendation: ntfy (with Accept / Ignore) and a webhook;
and, at the time they pick, asking how they feel (ntfy, with one-tap check-in buttons).

Each recommendation is announced at most once per channel: a row in `notifications` is
claimed before sending, so restarts and repeated cycles never send twice. A send that
failed is retried on later cycles (up to MAX_ATTEMPTS) while its slot is still open.
The daily check-in question is claimed the same way, in the person's meta row for its day.
Nothing is sent unless [notify] names a server or URL.
"""

from __future__ import annotations

import json
import logging
from datetime import date, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import select
from sqlmodel import col

from bridge.config import Settings
from bridge.out.snapshot import recommendation_document
from bridge.store import Store, upsert
from bridge.store.db import utcnow
from bridge.store.models import Feedback, Meta, Notification, Recommendation
from mappings.slots import SlotKey, slot_bounds

log = logging.getLogger("rhythm_bridge.notify")

NTFY_KEYRING_USER = "ntfy-token"
MAX_ATTEMPTS = 3


def channels(settings: Settings) -> list[str]:
    """The channels [notify] turns on."""
    cfg = settings.notify
    out = []
    if cfg.ntfy_server and cfg.ntfy_topic:
        out.append("ntfy")
    if cfg.webhook_url:
        out.append("webhook")
    return out


def _secret(settings: Settings, name: str) -> str | None:
    from bridge.auth.secrets import Secrets
    from bridge.errors import ConfigError

    try:
        return Secrets.from_settings(settings).get(name)
    except ConfigError:
        return None


def set_ntfy_token(settings: Settings, token: str | None) -> None:
    """Keep (or with None, forget) the ntfy server's access token in the keyring."""
    from bridge.auth.secrets import Secrets

    Secrets.from_settings(settings).put(NTFY_KEYRING_USER, token)


def _callback_token(settings: Settings) -> str | None:
    """The web access token for the buttons (made now if needed); None without a keyring."""
    from bridge.auth.access import ensure_access_token
    from bridge.errors import ConfigError

    try:
        return ensure_access_token(settings)
    except ConfigError:
        log.warning("no keyring for the web access token: notifications go without buttons")
        return None


def _title(doc: dict[str, Any]) -> str:
    what = doc["action"].replace("_", " ").lower()
    return f"Next ({doc['slot_name']}{window_words(doc)}): {what}"


def window_words(doc: dict[str, Any]) -> str:
    """' 09:00-09:45' in the window's own (the person's) offset, or '' without a window."""
    w = doc.get("window")
    if not w:
        return ""
    start, end = datetime.fromisoformat(w["start"]), datetime.fromisoformat(w["end"])
    return f" {start:%H:%M}-{end:%H:%M}"


def _message(doc: dict[str, Any]) -> str:
    text = doc["rationale"] or doc["action"]
    return f"{text}\n({doc['window_reason']})" if doc.get("window_reason") else text


def ntfy_message(settings: Settings, doc: dict[str, Any], access_token: str | None) -> dict:
    """The JSON ntfy publishes; Accept / Ignore buttons when the daemon can be called back."""
    cfg = settings.notify
    msg: dict[str, Any] = {
        "topic": cfg.ntfy_topic,
        "title": _title(doc),
        "message": _message(doc),
        "tags": ["rhythm-bridge"],
    }
    base = cfg.callback_url.rstrip("/")
    if base:
        msg["click"] = f"{base}/"
        actions: list[dict[str, Any]] = []
        if access_token:
            for label, response in (("Accept", "accepted"), ("Ignore", "ignored")):
                actions.append(
                    {
                        "action": "http",
                        "label": label,
                        "url": f"{base}/api/feedback",
                        "method": "POST",
                        "headers": {
                            "Authorization": f"Bearer {access_token}",
                            "Content-Type": "application/json",
                        },
                        "body": json.dumps(
                            {
                                "recommendation_id": doc["id"],
                                "response": response,
                                "channel": "ntfy",
                            }
                        ),
                        "clear": True,
                    }
                )
        actions.append({"action": "view", "label": "Open", "url": f"{base}/"})
        msg["actions"] = actions
    return msg


def webhook_message(settings: Settings, doc: dict[str, Any]) -> dict[str, Any]:
    """The JSON POSTed to the webhook: the recommendation and where to answer it (no token)."""
    base = settings.notify.callback_url.rstrip("/")
    return {
        "event": "recommendation",
        "title": _title(doc),
        "recommendation": doc,
        "page_url": f"{base}/" if base else None,
        "feedback_url": f"{base}/api/feedback" if base else None,
    }


def _send(client: httpx.Client, settings: Settings, channel: str, doc: dict[str, Any]) -> None:
    if channel == "ntfy":
        token = _callback_token(settings) if settings.notify.callback_url else None
        _post(client, settings, channel, ntfy_message(settings, doc, token))
    else:
        _post(client, settings, channel, webhook_message(settings, doc))


def _post(client: httpx.Client, settings: Settings, channel: str, body: dict[str, Any]) -> None:
    """POST one message to ntfy (with its access token, if any) or to the webhook."""
    cfg = settings.notify
    if channel == "ntfy":
        headers = {}
        ntfy_token = _secret(settings, NTFY_KEYRING_USER)
        if ntfy_token:
            headers["Authorization"] = f"Bearer {ntfy_token}"
        response = client.post(cfg.ntfy_server.rstrip("/") + "/", json=body, headers=headers)
    else:
        response = client.post(cfg.webhook_url, json=body)
    if response.status_code >= 400:
        raise httpx.HTTPStatusError(
            f"HTTP {response.status_code}", request=response.request, response=response
        )


def _claim(store: Store, rec_id: int, channel: str) -> bool:
    """Mark a send as under way; False when it was sent, is being sent, or gave up."""
    with store.transaction() as session:
        upsert(
            session,
            Notification,
            [
                {
                    "recommendation_id": rec_id,
                    "channel": channel,
                    "status": "sending",
                    "attempts": 0,
                    "created_at": utcnow(),
                }
            ],
            keys=("recommendation_id", "channel"),
        )
        row = session.execute(
            select(Notification).where(
                col(Notification.recommendation_id) == rec_id, col(Notification.channel) == channel
            )
        ).scalar_one()
        fresh = row.attempts == 0 and row.status == "sending"
        retry = row.status == "failed" and row.attempts < MAX_ATTEMPTS
        if not (fresh or retry):
            return False
        row.status, row.attempts = "sending", row.attempts + 1
        return True


def _finish(store: Store, rec_id: int, channel: str, error: str | None) -> None:
    with store.transaction() as session:
        row = session.execute(
            select(Notification).where(
                col(Notification.recommendation_id) == rec_id, col(Notification.channel) == channel
            )
        ).scalar_one()
        row.status = "failed" if error else "sent"
        row.last_error = error
        if not error:
            row.sent_at = utcnow()


def notify_recommendation(
    store: Store,
    settings: Settings,
    rec: Recommendation,
    now: datetime,
    *,
    client: httpx.Client | None = None,
) -> dict[str, str]:
    """Announce `rec` on every configured channel that has not announced it yet.

    Returns {channel: "sent" | "failed: ..."} for the channels tried this time. An answered
    recommendation, or one whose slot is over, is not announced.
    """
    wanted = channels(settings)
    if not wanted or rec.id is None:
        return {}
    _, end = slot_bounds(SlotKey(rec.local_date, rec.slot), settings.tz, settings.boundaries)
    with store.session() as session:
        answered = session.execute(
            select(col(Feedback.id)).where(col(Feedback.recommendation_id) == rec.id)
        ).first()
    if answered or now >= end:
        return {}
    doc = recommendation_document(rec, None, settings.tz)
    results: dict[str, str] = {}
    own = client is None
    client = client or httpx.Client(timeout=settings.notify.timeout_seconds)
    try:
        for channel in wanted:
            if not _claim(store, rec.id, channel):
                continue
            try:
                _send(client, settings, channel, doc)
                error = None
            except httpx.HTTPError as err:
                # The message names the failure, never the URL (a webhook URL can hold a key).
                error = str(err) if isinstance(err, httpx.HTTPStatusError) else type(err).__name__
                log.warning("notification via %s failed: %s", channel, error)
            _finish(store, rec.id, channel, error)
            results[channel] = "sent" if error is None else f"failed: {error}"
    finally:
        if own:
            client.close()
    return results


def _when(w: dict[str, str] | None) -> str:
    if not w:
        return "none in the calendar for the next days"
    start, end = datetime.fromisoformat(w["start"]), datetime.fromisoformat(w["end"])
    return f"{start:%a %d %b %H:%M}-{end:%H:%M}"


def no_window_messages(settings: Settings, doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The ntfy and webhook JSON saying that nothing is recommended, why, and the next window.

    No Accept / Ignore buttons: there is nothing to answer.
    """
    cfg = settings.notify
    base = cfg.callback_url.rstrip("/")
    title = "Nothing recommended: your calendar is full"
    text = f"{doc['reason']}\nNext free window: {_when(doc['next_window'])}"
    ntfy: dict[str, Any] = {
        "topic": cfg.ntfy_topic,
        "title": title,
        "message": text,
        "tags": ["rhythm-bridge"],
    }
    if base:
        ntfy["click"] = f"{base}/"
        ntfy["actions"] = [{"action": "view", "label": "Open", "url": f"{base}/"}]
    webhook = {
        "event": "no_window",
        "title": title,
        "no_window": doc,
        "page_url": f"{base}/" if base else None,
    }
    return {"ntfy": ntfy, "webhook": webhook}


def notify_no_window(
    store: Store, settings: Settings, now: datetime, *, client: httpx.Client | None = None
) -> dict[str, str]:
    """Say once per channel that the calendar leaves no window, for as long as it stays so.

    The channels told are kept with the no-window state: the next full slot is the same
    news and is not sent again; a failed send is tried again on the next cycle.
    """
    from bridge.out.snapshot import load_no_window, mark_no_window_notified, no_window_document

    wanted = channels(settings)
    state = load_no_window(store)
    doc = no_window_document(store, settings, now)
    if not wanted or state is None or doc is None:
        return {}
    todo = [c for c in wanted if c not in state["notified"]]
    if not todo:
        return {}
    bodies = no_window_messages(settings, doc)
    results: dict[str, str] = {}
    own = client is None
    client = client or httpx.Client(timeout=settings.notify.timeout_seconds)
    try:
        for channel in todo:
            try:
                _post(client, settings, channel, bodies[channel])
            except httpx.HTTPError as err:
                error = str(err) if isinstance(err, httpx.HTTPStatusError) else type(err).__name__
                log.warning("notification via %s failed: %s", channel, error)
                results[channel] = f"failed: {error}"
                continue
            mark_no_window_notified(store, channel)
            results[channel] = "sent"
    finally:
        if own:
            client.close()
    return results


# ---- the daily check-in question ------------------------------------------------------

CHECKIN_META = "checkin_prompt"
CHECKIN_PATH = "/api/checkin"
# A daemon that was down at the chosen time still asks within this long after it; later
# in the day the question would be about another part of it, and is skipped.
CHECKIN_GRACE = timedelta(hours=2)
# ntfy shows at most three action buttons: energy, the item most people can say at a
# glance, as low / ok / high on the 1-5 scale. The page's form asks everything, 1-5.
CHECKIN_BUTTONS = (("Energy low", 2), ("OK", 3), ("Energy high", 4))


def checkin_due(settings: Settings, now: datetime) -> date | None:
    """The day whose check-in question is due at `now` (`[notify] checkin_at` in the
    person's zone, up to CHECKIN_GRACE after it), or None."""
    at = settings.notify.checkin_time
    if at is None or "ntfy" not in channels(settings):
        return None
    local = now.astimezone(settings.tz)
    # Yesterday's too: a question asked at 23:30 is still due at 00:30.
    for day in (local.date(), local.date() - timedelta(days=1)):
        due = datetime.combine(day, at, tzinfo=settings.tz)
        if due <= local < due + CHECKIN_GRACE:
            return day
    return None


def _checkin_token(settings: Settings) -> str | None:
    """The person's check-in token (bridge.auth.access.checkin_token): never the access
    token itself, which would open the whole page to whoever reads the notification."""
    from bridge.auth.access import checkin_token

    access = _callback_token(settings)
    return checkin_token(access) if access else None


def checkin_message(settings: Settings, token: str | None) -> dict[str, Any]:
    """The JSON ntfy publishes: the question, and with a callback URL and a token, buttons
    that POST the answer to the page's check-in API as this person."""
    cfg = settings.notify
    msg: dict[str, Any] = {
        "topic": cfg.ntfy_topic,
        "title": "How is your energy?",
        "message": "One tap answers. The page asks more (mood, stress, focus, ...).",
        "tags": ["rhythm-bridge"],
    }
    base = cfg.callback_url.rstrip("/")
    if base:
        msg["click"] = f"{base}/#checkin"
        if token:
            msg["actions"] = [
                {
                    "action": "http",
                    "label": label,
                    "url": f"{base}{CHECKIN_PATH}",
                    "method": "POST",
                    "headers": {
                        "Authorization": f"Bearer {token}",
                        "Content-Type": "application/json",
                    },
                    "body": json.dumps({"energy": value}),
                    "clear": True,
                }
                for label, value in CHECKIN_BUTTONS
            ]
    return msg


def _claim_checkin(store: Store, day: date) -> bool:
    """Mark the day's question as being sent; False when it was sent, is being sent, or
    gave up after MAX_ATTEMPTS."""
    with store.transaction() as session:
        row = session.get(Meta, (store.person, CHECKIN_META))
        state = json.loads(row.value) if row else {}
        if state.get("date") == day.isoformat():
            if state.get("status") != "failed" or state.get("attempts", 0) >= MAX_ATTEMPTS:
                return False
            attempts = state["attempts"] + 1
        else:
            attempts = 1
        state = {"date": day.isoformat(), "status": "sending", "attempts": attempts}
        store.set_meta(session, CHECKIN_META, json.dumps(state))
        return True


def _finish_checkin(store: Store, day: date, error: str | None) -> None:
    raw = store.get_meta(CHECKIN_META)
    state = json.loads(raw) if raw else {"date": day.isoformat(), "attempts": 1}
    state.update(status="failed" if error else "sent", error=error)
    with store.transaction() as session:
        store.set_meta(session, CHECKIN_META, json.dumps(state))


def notify_checkin(
    store: Store, settings: Settings, now: datetime, *, client: httpx.Client | None = None
) -> dict[str, str]:
    """Ask the person how they feel, once a day at `[notify] checkin_at` (ntfy only).

    Returns {"ntfy": "sent" | "failed: ..."} when it tried, {} when nothing was due or it
    was already sent today (a restart does not ask twice).
    """
    day = checkin_due(settings, now)
    if day is None or not _claim_checkin(store, day):
        return {}
    token = _checkin_token(settings) if settings.notify.callback_url else None
    own = client is None
    client = client or httpx.Client(timeout=settings.notify.timeout_seconds)
    try:
        _post(client, settings, "ntfy", checkin_message(settings, token))
        error = None
    except httpx.HTTPError as err:
        error = str(err) if isinstance(err, httpx.HTTPStatusError) else type(err).__name__
        log.warning("check-in question via ntfy failed: %s", error)
    finally:
        if own:
            client.close()
    _finish_checkin(store, day, error)
    return {"ntfy": "sent" if error is None else f"failed: {error}"}
