"""Garmin Connect Personal API: daily HRV, sleep (stages, score), resting HR, stress,
body battery, steps and all-day heart rate.

The person creates an API key in Garmin Connect web; it is exchanged for a bearer token
(a JWT, about a day) that is cached in the keyring and renewed an hour before it expires,
so the key is used about once a day. Garmin locks out clients that ask too often: every
range is at most `max_range_days`, requests are paced, and a 429 stops the source for
`rate_limit_backoff_hours`. Watches upload late, so each pull re-reads `refetch_days`.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from typing import Any

import httpx

from bridge.auth.secrets import Secrets
from bridge.config import Settings
from bridge.errors import AuthExpired, NotConnected, RateLimited, SourceError
from connectors.base import ReadContext, ReadingRecord
from connectors.http import RateWindow, RetryPolicy, new_client, parse_json, request
from connectors.live import (
    Cursors,
    Progress,
    PullResult,
    no_progress,
    normalize,
    packed_sleep,
    page_items,
    pull_start,
    wake_time,
)
from connectors.registry import auth_command

log = logging.getLogger("rhythm_bridge.garmin")

SOURCE = "garmin"
KEY_SECRET = "garmin:api_key"
TOKEN_SECRET = "garmin:token"
STREAM = "daily"
ORIGIN = "garmin"
_RENEW_BEFORE = 3600.0  # seconds: renew the bearer token an hour before it expires
_DEFAULT_LIFETIME = 20 * 3600.0


def _jwt_expiry(token: str) -> float | None:
    """The `exp` claim of a JWT, read without verifying (only to know when to renew)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return float(claims["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return None


def _token_from_body(resp: httpx.Response) -> str:
    """Garmin answers the bearer token as plain text; accept a JSON wrapper too."""
    text = resp.text.strip()
    if text.startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError:
            doc = {}
        for key in ("token", "access_token", "accessToken", "bearerToken"):
            if isinstance(doc.get(key), str):
                return doc[key]
        raise SourceError("garmin token endpoint answered JSON without a token")
    token = text.strip('"')
    # A bearer token is one short line of printable characters; a captive portal's or a
    # proxy's HTML page is not, and must not be stored and sent as one.
    if len(token) > 8192 or not token.isprintable() or " " in token:
        raise SourceError(
            "garmin token endpoint answered something that is not a token; nothing was "
            "stored; the next sync tries again"
        )
    return token


class GarminTokens:
    """API key -> bearer token, cached in the keyring until an hour before it expires."""

    def __init__(
        self, settings: Settings, secrets: Secrets, client: httpx.Client, policy: RetryPolicy
    ) -> None:
        self.cfg = settings.sources.garmin
        self.secrets, self.client, self.policy = secrets, client, policy

    def exchange(self, api_key: str) -> dict[str, Any]:
        """Trade the API key for a bearer token and store both; AuthExpired if refused."""
        resp = request(
            self.client,
            "POST",
            self.cfg.token_url,
            what="garmin token",
            policy=self.policy,
            headers={"Authorization": f"ApiKey {api_key}"},
        )
        if resp.status_code in (400, 401, 403):
            raise AuthExpired(
                SOURCE,
                f"the Personal API key was refused ({resp.status_code}); it may have expired: "
                "create a new one in Garmin Connect web",
                command=auth_command(SOURCE),
            )
        if resp.status_code != 200:
            raise SourceError(f"garmin token endpoint answered {resp.status_code}")
        token = _token_from_body(resp)
        if not token:
            raise SourceError("garmin token endpoint answered an empty token")
        expires = _jwt_expiry(token) or time.time() + _DEFAULT_LIFETIME
        stored = {"access_token": token, "expires_at": expires}
        self.secrets.set(KEY_SECRET, api_key)
        self.secrets.set_json(TOKEN_SECRET, stored)
        return stored

    def access_token(self, *, force: bool = False) -> str:
        token = self.secrets.get_json(TOKEN_SECRET)
        if token and not force and float(token.get("expires_at", 0)) - _RENEW_BEFORE > time.time():
            return str(token["access_token"])
        key = self.secrets.get(KEY_SECRET)
        if not key:
            raise NotConnected(SOURCE, command=auth_command(SOURCE))
        return str(self.exchange(key)["access_token"])


class GarminAPI:
    def __init__(
        self, settings: Settings, secrets: Secrets, client: httpx.Client | None = None
    ) -> None:
        self.cfg = settings.sources.garmin
        base = RetryPolicy.from_settings(settings)
        # 429s are never waited out inline: Garmin's lockouts last hours.
        self.policy = RetryPolicy(base.max_attempts, base.base, base.cap, max_inline_wait=-1)
        self.client = client or new_client(settings.http.timeout_seconds)
        self.tokens = GarminTokens(settings, secrets, self.client, self.policy)
        self.window = RateWindow(30, 60.0)
        self.requests = 0

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        url = self.cfg.api_base_url.rstrip("/") + path
        try:
            for attempt in range(2):
                headers = {
                    "Authorization": f"Bearer {self.tokens.access_token(force=attempt > 0)}",
                    "Accept": "application/json",
                }
                resp = request(
                    self.client,
                    "GET",
                    url,
                    what=f"garmin {path}",
                    policy=self.policy,
                    window=self.window,
                    params=params,
                    headers=headers,
                )
                self.requests += 1
                if resp.status_code != 401:
                    break
        except RateLimited as err:
            wait = max(err.retry_after or 0.0, self.cfg.rate_limit_backoff_hours * 3600)
            raise RateLimited(
                f"garmin: rate limited (429); pausing for {wait / 3600:.1f} h", retry_after=wait
            ) from None
        if resp.status_code in (401, 403):
            raise AuthExpired(
                SOURCE, f"{path} answered {resp.status_code}", command=auth_command(SOURCE)
            )
        if resp.status_code == 204 or (resp.status_code == 404 and "date" in (params or {})):
            return None  # no data that day
        if resp.status_code != 200:
            raise SourceError(f"garmin {path} answered {resp.status_code}")
        # An empty body is how some endpoints say "no data that day".
        return parse_json(resp.content, f"garmin {path}") if resp.content.strip() else None


# --- normalizing ------------------------------------------------------------------------


def _gmt(text: str) -> datetime:
    """Garmin's naive "...GMT" strings ("2025-06-13T22:00:00.0") as aware UTC."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _zone(local: str | int | None, gmt: str | int | None) -> timezone:
    """The UTC offset of one Local/GMT pair (strings or epoch ms); UTC if unknown."""
    if local is None or gmt is None:
        return UTC
    if isinstance(local, int | float) and isinstance(gmt, int | float):
        delta = timedelta(milliseconds=local - gmt)
    else:
        delta = datetime.fromisoformat(str(local)) - datetime.fromisoformat(str(gmt))
    minutes = round(delta.total_seconds() / 60 / 15) * 15
    return timezone(timedelta(minutes=minutes)) if abs(minutes) < 18 * 60 else UTC


def _instant(gmt: str | int | float) -> datetime:
    if isinstance(gmt, int | float):
        return datetime.fromtimestamp(gmt / 1000, UTC)
    return _gmt(str(gmt))


def _zone_of(tz: tzinfo, *pairs: tuple[Any, Any]) -> tzinfo:
    """The zone that gives each row the offset at its own instant.

    Garmin gives a Local/GMT pair only at a day's (or night's) start and end; on the day
    of a daylight-saving change they differ, and one fixed offset would be wrong for part
    of the day. The person's zone is used when it agrees with every pair (then it knows
    the exact moment of the change); else (travelling, zone not configured) the pairs'
    offset, which is exact on every day without a change.
    """
    known = [(local, gmt) for local, gmt in pairs if local is not None and gmt is not None]
    if not known:
        return tz
    offsets = [_zone(local, gmt) for local, gmt in known]
    try:
        agrees = all(
            _instant(gmt).astimezone(tz).utcoffset() == off.utcoffset(None)
            for (_, gmt), off in zip(known, offsets, strict=True)
        )
    except (ValueError, OverflowError, OSError):
        agrees = False
    return tz if agrees else offsets[0]


def _day_start(day: str, tz: Any) -> datetime:
    d = date.fromisoformat(day)
    return datetime(d.year, d.month, d.day, tzinfo=tz)


def hrv_records(summary: dict[str, Any], tz: Any) -> list[ReadingRecord]:
    """Last night's average RMSSD (ms), dated at the start of the day it ends on."""
    value = summary.get("lastNightAvg")
    if value is None:
        return []
    when = _day_start(summary["calendarDate"], tz)
    return [ReadingRecord("hrv_rmssd", when, when, float(value), "ms", "", ORIGIN)]


def sleep_records(doc: dict[str, Any], tz: tzinfo = UTC) -> list[ReadingRecord]:
    """In-bed span, stage totals packed from sleep start, score and breathing rate.

    Garmin re-scores a night (new stage totals) and people edit their sleep window: all
    of the night's rows are one fact, `sleep:<calendarDate>`, replaced as one.
    """
    dto = doc.get("dailySleepDTO") or doc
    start_ms, end_ms = dto.get("sleepStartTimestampGMT"), dto.get("sleepEndTimestampGMT")
    if not start_ms or not end_ms:
        return []
    # The "Local" stamps are wall time shifted, not UTC: use them only for the offset.
    zone = _zone_of(
        tz,
        (dto.get("sleepStartTimestampLocal"), start_ms),
        (dto.get("sleepEndTimestampLocal"), end_ms),
    )
    start = datetime.fromtimestamp(start_ms / 1000, UTC).astimezone(zone)
    end = datetime.fromtimestamp(end_ms / 1000, UTC).astimezone(zone)
    if end <= start:
        return []
    out = packed_sleep(
        start,
        end,
        (end - start).total_seconds() / 60,
        {
            "deep": (dto.get("deepSleepSeconds") or 0) / 60,
            "core": (dto.get("lightSleepSeconds") or 0) / 60,
            "rem": (dto.get("remSleepSeconds") or 0) / 60,
            "awake": (dto.get("awakeSleepSeconds") or 0) / 60,
        },
        ORIGIN,
    )
    overall = ((dto.get("sleepScores") or {}).get("overall") or {}).get("value")
    if overall is not None:
        out.append(ReadingRecord("sleep_score", end, end, float(overall), "%", "", ORIGIN))
    if dto.get("averageRespirationValue") is not None:
        value = float(dto["averageRespirationValue"])
        out.append(ReadingRecord("respiratory_rate", start, end, value, "count/min", "", ORIGIN))
    night = dto.get("calendarDate") or str(end.date())
    for rec in out:
        rec.revision = f"sleep:{night}"
    return out


def summary_records(day: dict[str, Any], tz: tzinfo = UTC) -> list[ReadingRecord]:
    """The day so far: steps and average stress over [day start, last upload], resting HR
    at its start, Body Battery at wake-up.

    A day not yet over ends at the watch's last upload and grows with the next one: every
    row of the summary is one fact, `day:<calendarDate>`, replaced as one, so a day is
    never counted once per sync. Body Battery at wake describes the morning it was
    measured: it is dated at the wake-up (the summary's SLEEP event), where the meters
    look for it; highest and lowest so far are kept with the day.
    """
    start_gmt, end_gmt = day.get("wellnessStartTimeGmt"), day.get("wellnessEndTimeGmt")
    if not start_gmt or not end_gmt:
        return []
    zone = _zone_of(
        tz,
        (day.get("wellnessStartTimeLocal"), start_gmt),
        (day.get("wellnessEndTimeLocal"), end_gmt),
    )
    start, end = _gmt(start_gmt).astimezone(zone), _gmt(end_gmt).astimezone(zone)
    out = []
    if day.get("totalSteps") is not None:
        out.append(
            ReadingRecord("steps", start, end, float(day["totalSteps"]), "count", "", ORIGIN)
        )
    if day.get("restingHeartRate"):
        value = float(day["restingHeartRate"])
        out.append(ReadingRecord("resting_hr", start, start, value, "count/min", "", ORIGIN))
    # Negative stress means "not enough data" (-1) or "too active to measure" (-2).
    stress = day.get("averageStressLevel")
    if stress is not None and stress >= 0:
        out.append(ReadingRecord("stress", start, end, float(stress), "", "day_avg", ORIGIN))
    woke = wake_time(day, start, end)
    for label, key in (
        ("at_wake", "bodyBatteryAtWakeTime"),
        ("highest", "bodyBatteryHighestValue"),
        ("lowest", "bodyBatteryLowestValue"),
    ):
        if day.get(key) is not None:
            when = woke.astimezone(zone) if label == "at_wake" and woke else start
            out.append(
                ReadingRecord("body_battery", when, when, float(day[key]), "", label, ORIGIN)
            )
    revision = f"day:{day.get('calendarDate') or start.date()}"
    for rec in out:
        rec.revision = revision
    return out


def heart_rate_records(doc: dict[str, Any], tz: tzinfo = UTC) -> list[ReadingRecord]:
    """All-day heart rate samples ([epoch ms, bpm] pairs; null bpm = off-wrist), each
    with the offset at its own instant."""
    zone = _zone_of(
        tz,
        (doc.get("startTimestampLocal"), doc.get("startTimestampGMT")),
        (doc.get("endTimestampLocal"), doc.get("endTimestampGMT")),
    )
    out = []
    for pair in doc.get("heartRateValues") or []:
        if not isinstance(pair, list) or len(pair) < 2 or pair[1] is None:
            continue
        when = datetime.fromtimestamp(pair[0] / 1000, UTC).astimezone(zone)
        out.append(ReadingRecord("heart_rate", when, when, float(pair[1]), "count/min", "", ORIGIN))
    return out


def _summaries(doc: Any, what: str) -> list[Any]:
    """The daily summaries endpoint answers {"data": [...]}, a list, or one day's object."""
    if doc is None or isinstance(doc, list):
        return doc or []
    for key in ("data", "dailySummaries"):
        if isinstance(doc, dict) and key in doc:
            return page_items(doc, key, what)
    return [doc] if isinstance(doc, dict) else page_items(doc, "data", what)


# --- one pull ---------------------------------------------------------------------------


def ranges(first: date, last: date, days: int) -> Iterator[tuple[date, date]]:
    """[first, last] in inclusive chunks of at most `days` days."""
    while first <= last:
        stop = min(last, first + timedelta(days=days - 1))
        yield first, stop
        first = stop + timedelta(days=1)


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
    """Fetch every day from the cursor (minus the re-fetch window) to today; no DB access."""
    cfg = settings.sources.garmin
    api = GarminAPI(settings, secrets, client)
    today = ctx.now.astimezone(ctx.tz).date()
    old = cursors.get((STREAM, ""))
    first = pull_start(
        since.astimezone(ctx.tz) if since else None,
        date.fromisoformat(old) if old else None,
        today - timedelta(days=cfg.refetch_days),
        today - timedelta(days=ctx.past_days),
        day=True,
    )
    result = PullResult()
    hrv: list[dict[str, Any]] = []
    days: list[dict[str, Any]] = []
    sleeps: list[dict[str, Any]] = []
    rates: list[dict[str, Any]] = []
    try:
        for lo, hi in ranges(first, today, cfg.max_range_days):
            path = f"/hrv-service/hrv/daily/{lo}/{hi}"
            hrv.extend(page_items(api.get(path) or {}, "hrvSummaries", f"garmin {path}"))
            progress("hrv", len(hrv))
            path = "/usersummary-service/v2/dailysummaries"
            doc = api.get(path, {"startDate": str(lo), "endDate": str(hi)})
            days.extend(_summaries(doc, f"garmin {path}"))
            progress("daily summaries", len(days))
        for lo, _ in ranges(first, today, 1):
            doc = api.get("/sleep-service/sleep/dailySleep", {"date": str(lo)})
            if doc:
                sleeps.append(doc)
            doc = api.get("/wellness-service/wellness/dailyHeartRate", {"date": str(lo)})
            if doc:
                rates.append(doc)
            progress("sleep and heart rate", len(sleeps))
    finally:
        result.requests = api.requests
        if client is None:
            api.client.close()
    result.records.extend(normalize(SOURCE, "hrv", hrv, lambda s: hrv_records(s, ctx.tz)))
    tz = ctx.tz
    result.records.extend(normalize(SOURCE, "summary", days, lambda d: summary_records(d, tz)))
    result.records.extend(normalize(SOURCE, "sleep", sleeps, lambda d: sleep_records(d, tz)))
    result.records.extend(
        normalize(SOURCE, "heart_rate", rates, lambda d: heart_rate_records(d, tz))
    )
    result.cursors[(STREAM, "")] = str(today)
    return result
