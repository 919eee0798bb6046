"""WHOOP API v2: cycles, recovery, sleep and workouts, with rotating refresh tokens.

WHOOP rotates the refresh token on every refresh (the old one dies), so a refresh runs
under a cross-process lock, re-reads the stored token first (another process may have
refreshed already) and stores the new pair before the access token is used.
Records can be re-scored after they first appear (`PENDING_SCORE` -> `SCORED`), so each
pull re-reads from the oldest still-pending record or `refetch_days` back, whichever is
earlier; the upserts make the overlap free.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from bridge.auth.oauth import refresh_lock
from bridge.auth.secrets import Secrets
from bridge.config import Settings
from bridge.errors import AuthExpired, NotConnected, SourceError
from connectors.base import ReadContext, ReadingRecord
from connectors.http import RateWindow, RetryPolicy, new_client, parse_json, request
from connectors.live import (
    MALFORMED,
    Cursors,
    Progress,
    PullResult,
    iso_z,
    no_progress,
    normalize,
    packed_sleep,
    page_items,
    parse_instant,
    parse_offset,
    pull_start,
)
from connectors.registry import auth_command
from connectors.validate import EARLIEST, FUTURE_SLACK

log = logging.getLogger("rhythm_bridge.whoop")

SOURCE = "whoop"
SCOPES = (
    "offline",
    "read:recovery",
    "read:cycles",
    "read:sleep",
    "read:workout",
    "read:profile",
)
TOKEN_SECRET = "whoop:token"
CLIENT_SECRET = "whoop:client_secret"
PAGE_LIMIT = 25  # the API's maximum
SLEEP_MARGIN = timedelta(days=1)
# stream -> collection path. Sleep comes before recovery: a recovery is dated by its sleep.
STREAMS = {
    "cycle": "/v2/cycle",
    "sleep": "/v2/activity/sleep",
    "recovery": "/v2/recovery",
    "workout": "/v2/activity/workout",
}
_EARLY_REFRESH = 120.0  # seconds before expiry


def _what(path: str) -> str:
    return f"whoop {path}"


class WhoopTokens:
    """The stored token pair: read, refresh (single-flight, rotation-safe), exchange."""

    def __init__(
        self, settings: Settings, secrets: Secrets, client: httpx.Client, policy: RetryPolicy
    ) -> None:
        self.cfg = settings.sources.whoop
        self.secrets, self.client, self.policy = secrets, client, policy
        self.lock_path = settings.person_path / ".whoop-token.lock"

    def _client_secret(self) -> str:
        secret = self.secrets.get(CLIENT_SECRET)
        if not self.cfg.client_id or not secret:
            raise AuthExpired(SOURCE, "no client id/secret stored", command=auth_command(SOURCE))
        return secret

    def _post_token(self, form: dict[str, str]) -> dict[str, Any]:
        resp = request(
            self.client,
            "POST",
            self.cfg.token_url,
            what="whoop token",
            policy=self.policy,
            data=form,
        )
        if resp.status_code in (400, 401, 403):
            # invalid_grant: the refresh token was revoked, expired or already spent.
            try:
                doc = parse_json(resp.content, "whoop token endpoint")
            except SourceError:
                doc = None
            err = doc.get("error") if isinstance(doc, dict) else None
            # Only a short OAuth error code belongs in the one-line message.
            err = err if isinstance(err, str) and err.isprintable() and len(err) < 64 else ""
            raise AuthExpired(
                SOURCE,
                f"token endpoint said {resp.status_code} {err}".strip(),
                command=auth_command(SOURCE),
            )
        if resp.status_code != 200:
            raise SourceError(f"whoop token endpoint answered {resp.status_code}")
        body = parse_json(resp.content, "whoop token endpoint")
        if not isinstance(body, dict) or not body.get("access_token"):
            raise SourceError("whoop token endpoint answered without an access_token")
        return body

    def _store(self, body: dict[str, Any], previous: dict[str, Any] | None) -> dict[str, Any]:
        token = {
            "access_token": body["access_token"],
            # WHOOP always rotates, but keep the old one if an answer ever lacks it.
            "refresh_token": body.get("refresh_token") or (previous or {}).get("refresh_token"),
            "expires_at": time.time() + float(body.get("expires_in", 3600)),
            "scope": body.get("scope", ""),
        }
        self.secrets.set_json(TOKEN_SECRET, token)
        return token

    def exchange_code(self, code: str, verifier: str | None) -> dict[str, Any]:
        """Trade the authorization code for the first token pair and store it."""
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.cfg.redirect_uri,
            "client_id": self.cfg.client_id,
            "client_secret": self._client_secret(),
        }
        if verifier:
            form["code_verifier"] = verifier
        with refresh_lock(self.lock_path):
            return self._store(self._post_token(form), None)

    def access_token(self, *, force: bool = False) -> str:
        """A valid access token, refreshing (once, under the lock) when it is due."""
        with refresh_lock(self.lock_path):
            token = self.secrets.get_json(TOKEN_SECRET)
            if not token or not token.get("refresh_token"):
                raise NotConnected(SOURCE, command=auth_command(SOURCE))
            fresh = float(token.get("expires_at", 0)) - _EARLY_REFRESH > time.time()
            if fresh and not force:
                return str(token["access_token"])
            body = self._post_token(
                {
                    "grant_type": "refresh_token",
                    "refresh_token": token["refresh_token"],
                    "client_id": self.cfg.client_id,
                    "client_secret": self._client_secret(),
                    "scope": "offline",
                }
            )
            # Store before use: the old refresh token is already dead on WHOOP's side.
            return str(self._store(body, token)["access_token"])


class WhoopAPI:
    """The v2 user API with bearer auth, retries, the 100-a-minute budget and paging."""

    def __init__(
        self, settings: Settings, secrets: Secrets, client: httpx.Client | None = None
    ) -> None:
        self.cfg = settings.sources.whoop
        self.policy = RetryPolicy.from_settings(settings)
        self.client = client or new_client(settings.http.timeout_seconds)
        self.tokens = WhoopTokens(settings, secrets, self.client, self.policy)
        self.window = RateWindow(self.cfg.requests_per_minute)
        self.requests = 0

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        url = self.cfg.api_base_url.rstrip("/") + path
        for attempt in range(2):
            headers = {"Authorization": f"Bearer {self.tokens.access_token(force=attempt > 0)}"}
            resp = request(
                self.client,
                "GET",
                url,
                what=_what(path),
                policy=self.policy,
                window=self.window,
                params=params,
                headers=headers,
            )
            self.requests += 1
            if resp.status_code != 401:
                break
        if resp.status_code in (401, 403):
            raise AuthExpired(
                SOURCE, f"{path} answered {resp.status_code}", command=auth_command(SOURCE)
            )
        if resp.status_code != 200:
            raise SourceError(f"whoop {path} answered {resp.status_code}")
        return parse_json(resp.content, _what(path))

    def delete(self, path: str) -> int:
        url = self.cfg.api_base_url.rstrip("/") + path
        headers = {"Authorization": f"Bearer {self.tokens.access_token()}"}
        resp = request(
            self.client, "DELETE", url, what=_what(path), policy=self.policy, headers=headers
        )
        return resp.status_code

    def collection(
        self, path: str, start: datetime, end: datetime, progress: Progress, stage: str
    ) -> list[dict[str, Any]]:
        """Every record of a collection with start in [start, end), following nextToken."""
        records: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": PAGE_LIMIT, "start": iso_z(start), "end": iso_z(end)}
        seen_tokens: set[str] = set()
        while True:
            page = self.get(path, params)
            records.extend(page_items(page, "records", _what(path)))
            progress(stage, len(records))
            token = page.get("next_token")  # snake_case in the body, camelCase in the query
            if not token or not isinstance(token, str) or token in seen_tokens:
                return records
            seen_tokens.add(token)
            params = {**params, "nextToken": token}


# --- normalizing ----------------------------------------------------------------------


def _instant(text: str) -> datetime:
    """An API instant in whole seconds: the app's export (connectors/whoop_export.py) has
    no milliseconds, and a night both pulled and exported must have one natural key."""
    return parse_instant(text).replace(microsecond=0)


def _span(raw: dict[str, Any]) -> tuple[datetime, datetime | None]:
    tz = parse_offset(raw.get("timezone_offset"))
    start = _instant(raw["start"]).astimezone(tz)
    end = _instant(raw["end"]).astimezone(tz) if raw.get("end") else None
    return start, end


def _scored(raw: dict[str, Any]) -> dict[str, Any] | None:
    score = raw.get("score")
    return score if raw.get("score_state") == "SCORED" and isinstance(score, dict) else None


def sleep_records(raw: dict[str, Any]) -> list[ReadingRecord]:
    """In-bed span, stage totals packed from sleep start (WHOOP has no hypnogram), score."""
    score = _scored(raw)
    start, end = _span(raw)
    if score is None or end is None:
        return []
    origin = "whoop-nap" if raw.get("nap") else "whoop"
    stages = score.get("stage_summary") or {}

    def minutes(key: str) -> float:
        return (stages.get(key) or 0) / 60000

    out = packed_sleep(
        start,
        end,
        minutes("total_in_bed_time_milli"),
        {
            "deep": minutes("total_slow_wave_sleep_time_milli"),
            "core": minutes("total_light_sleep_time_milli"),
            "rem": minutes("total_rem_sleep_time_milli"),
            "awake": minutes("total_awake_time_milli"),
        },
        origin,
    )
    if score.get("sleep_performance_percentage") is not None:
        value = float(score["sleep_performance_percentage"])
        out.append(ReadingRecord("sleep_score", end, end, value, "%", "", origin))
    if score.get("respiratory_rate") is not None:
        value = float(score["respiratory_rate"])
        out.append(ReadingRecord("respiratory_rate", start, end, value, "count/min", "", origin))
    return _revision(out, f"sleep:{raw['id']}")


def _revision(records: list[ReadingRecord], key: str) -> list[ReadingRecord]:
    """WHOOP re-scores sleeps and people edit them (new start or end, new stage totals):
    every row of one API object is one fact, named by the object's id."""
    for rec in records:
        rec.revision = key
    return records


def recovery_records(
    raw: dict[str, Any], wake_times: dict[str, datetime | None]
) -> list[ReadingRecord]:
    """Recovery, RMSSD and resting HR, dated at the wake-up of the sleep they come from."""
    score = _scored(raw)
    if score is None:
        return []
    when = wake_times.get(str(raw.get("sleep_id")))
    if when is None:  # its sleep is outside the window: the recovery is made at wake-up
        when = _instant(raw["created_at"])
    out = []
    for metric, key, unit in (
        ("recovery", "recovery_score", "%"),
        ("hrv_rmssd", "hrv_rmssd_milli", "ms"),
        ("resting_hr", "resting_heart_rate", "count/min"),
    ):
        if score.get(key) is not None:
            out.append(ReadingRecord(metric, when, when, float(score[key]), unit, "", "whoop"))
    # Dated at its sleep's wake-up, which moves when the sleep is edited: the cycle's.
    return _revision(out, f"recovery:{raw['cycle_id']}")


def cycle_records(raw: dict[str, Any]) -> list[ReadingRecord]:
    score = _scored(raw)
    start, end = _span(raw)
    if score is None or end is None or score.get("average_heart_rate") is None:
        return []
    value = float(score["average_heart_rate"])
    rec = ReadingRecord("heart_rate", start, end, value, "count/min", "cycle_avg", "whoop")
    return _revision([rec], f"cycle:{raw['id']}")


def workout_records(raw: dict[str, Any]) -> list[ReadingRecord]:
    start, end = _span(raw)
    if end is None or end <= start:
        return []
    minutes = (end - start).total_seconds() / 60
    sport = str(raw.get("sport_name") or "activity")
    rec = ReadingRecord("workout", start, end, minutes, "min", sport, "whoop")
    return _revision([rec], f"workout:{raw['id']}")


# --- one pull -------------------------------------------------------------------------


def _next_cursor(
    stream: str, raws: list[dict[str, Any]], old: str | None, now: datetime
) -> str | None:
    """Oldest still-pending record's time, else the newest record's time, else `old`.

    Times no record can have (1900, 2200) are ignored like the records themselves: a
    cursor in 2200 would never move again, one in 1900 would re-read a century each pull.
    """
    times, pending = [], []
    latest = now + FUTURE_SLACK
    for raw in raws:
        try:
            when = parse_instant(str(raw.get("start") or raw["created_at"]))
        except (KeyError, ValueError, AttributeError):
            continue  # normalize() reports the malformed record
        if not EARLIEST <= when <= latest:
            continue
        times.append(when)
        if raw.get("score_state") == "PENDING_SCORE" or (stream == "cycle" and not raw.get("end")):
            pending.append(when)
    if pending:
        return iso_z(min(pending))
    if not times:
        return old
    newest = max(times)
    return iso_z(newest) if not old or newest > parse_instant(old) else old


def pull(
    settings: Settings,
    secrets: Secrets,
    ctx: ReadContext,
    cursors: Cursors,
    *,
    since: datetime | None = None,
    progress: Progress = no_progress,
    client: httpx.Client | None = None,
) -> PullResult:
    """Fetch every stream from its cursor (minus the re-fetch window) to now; no DB access."""
    api = WhoopAPI(settings, secrets, client)
    now = ctx.now.astimezone(UTC)
    refetch = now - timedelta(days=settings.sources.whoop.refetch_days)
    fetched: dict[str, list[dict[str, Any]]] = {}
    result = PullResult()
    try:
        for stream, path in STREAMS.items():
            old = cursors.get((stream, ""))
            start = pull_start(
                since,
                parse_instant(old) if old else None,
                refetch,
                now - timedelta(days=ctx.past_days),
                day=False,
            )
            if stream == "sleep":
                # A day before the others: every recovery fetched finds its sleep and is
                # dated at that wake-up whichever window fetched it. Without its sleep it
                # falls back to created_at, and the same morning would be stored twice.
                start -= SLEEP_MARGIN
            fetched[stream] = api.collection(path, start, now, progress, stream)
            result.cursors[(stream, "")] = _next_cursor(stream, fetched[stream], old, now)
    finally:
        result.requests = api.requests
        if client is None:
            api.client.close()
    wake_times = {}
    for raw in fetched["sleep"]:
        try:
            if raw.get("end") and not raw.get("nap"):
                wake_times[str(raw.get("id"))] = _span(raw)[1]
        except MALFORMED:
            continue  # normalize() reports the malformed sleep
    for stream, convert in (
        ("cycle", cycle_records),
        ("sleep", sleep_records),
        ("recovery", lambda raw: recovery_records(raw, wake_times)),
        ("workout", workout_records),
    ):
        result.records.extend(normalize(SOURCE, stream, fetched[stream], convert))
    return result
