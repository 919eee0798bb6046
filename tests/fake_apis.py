"""Google Calendar, WHOOP, Garmin and an .ics feed as one local HTTP server on 127.0.0.1.

A small deterministic world unfolds with a clock the caller sets: events appear ten days
ahead, move, and are cancelled the day before; sleeps show up at wake-up as PENDING_SCORE,
are scored an hour later, re-scored later still, and some are edited; Garmin holds what
the watch uploaded, a few times a day, so today's summary ends at the last upload (as a
real recorded one does) and its steps, stress and heart rate grow with each upload. That
is what the real services do between two pulls, so a daemon syncing against this server for
weeks meets every kind of change. The shapes come from the real samples in tests/fixtures
(WHOOP's OpenAPI examples, Garmin Connect responses).

Used by `benchmarks/soak.py` (an accelerated clock, set with POST /_clock) and the fault
tests (the real clock). `faults=True` makes every 53rd API request answer 503, every 89th
answer 429 with Retry-After, every 131st drop the connection, and refuses everything
during a one-off outage; OAuth endpoints rotate tokens like the providers do.

    python -m tests.fake_apis [--faults]   # prints "port N"; serves until stdin closes
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import random
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from connectors.live import iso_z
from tests.conftest import BERLIN
from tests.shared import shared_path

GARMIN = shared_path("garmin", "connect_api")
# Everything "created long ago" (the standup series, the first tokens) is from then.
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
ME = "me@example.com"
SERIES = "5t3kq0dv6f1n2standup"
# The weekday standup runs to here: a full list returns every future instance up to it.
SERIES_END = date(2026, 12, 31)
CALENDARS = ("primary", "work@example.com")
TITLES = (
    "Gym",
    "1:1 with Alex",
    "Deep work: quarterly report",
    "Dinner with family",
    "Dentist",
    "Run 5k",
    "Meditation",
    "Grocery shopping",
    "Call mom",
    "Project review",
    "Lunch with Sam",
    "Yoga class",
)
SPORTS = ("running", "cycling", "functional-fitness", "yoga")
GOOGLE_PAGE = 100
WHOOP_PAGE = 25
# A sync token older than the last week boundary is refused with 410, as Google does now
# and then: once a week every calendar goes through a full resync.
TOKEN_WEEK = timedelta(days=7)
# The API paths of each provider, as served under /google, /whoop, /garmin.
GOOGLE_BASE, WHOOP_BASE, GARMIN_BASE = "/google/calendar/v3/", "/whoop/developer", "/garmin"
READONLY = "https://www.googleapis.com/auth/calendar.readonly"
WRITE_SCOPES = {
    "https://www.googleapis.com/auth/calendar.events",
    "https://www.googleapis.com/auth/calendar",
}
BASE32HEX = set("0123456789abcdefghijklmnopqrstuv")


def _merge(into: dict[str, Any], patch: dict[str, Any]) -> None:
    """Patch semantics: given fields replace, nested objects merge, arrays are replaced."""
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


def _ms(value: datetime) -> int:
    return int(value.timestamp() * 1000)


def _garmin_stamp(value: datetime) -> str:
    """Garmin's naive "2025-06-13T22:00:00.0" strings."""
    return value.replace(tzinfo=None).isoformat(timespec="seconds") + ".0"


def _offset(value: datetime) -> str:
    text = value.strftime("%z")
    return f"{text[:3]}:{text[3:]}"


def _local(day: date, hour: int, minute: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=BERLIN)


def _days(first: date, last: date) -> Iterator[date]:
    while first <= last:
        yield first
        first += timedelta(days=1)


class World:
    """Every record the fake providers hold, as a pure function of the clock."""

    def __init__(self, seed: int = 7, bulk: int = 0) -> None:
        self.seed = seed
        # Extra one-off events per day on "primary": makes a full sync long (fault tests).
        self.bulk = bulk
        self._days: dict[tuple[str, date], list[list[tuple[datetime, dict]]]] = {}
        self._lists: dict[tuple[Any, ...], list[dict]] = {}

    def rng(self, *parts: object) -> random.Random:
        return random.Random("/".join(map(str, (self.seed, *parts))))

    def uuid(self, *parts: object) -> str:
        return str(uuid.UUID(int=self.rng("uuid", *parts).getrandbits(128), version=4))

    # --- calendar -----------------------------------------------------------------------

    def _event(
        self,
        eid: str,
        title: str,
        start: datetime,
        end: datetime,
        at: datetime,
        *,
        series_start: datetime | None = None,
        all_day: bool = False,
        sequence: int = 0,
    ) -> dict[str, Any]:
        def when(value: datetime) -> dict[str, str]:
            if all_day:
                return {"date": value.date().isoformat()}
            return {"dateTime": value.isoformat(), "timeZone": "Europe/Berlin"}

        body: dict[str, Any] = {
            "kind": "calendar#event",
            "etag": f'"{_ms(at)}{sequence}"',
            "id": eid,
            "status": "confirmed",
            "htmlLink": f"https://calendar.example/event?eid={eid}",
            "created": iso_z(EPOCH),
            "updated": iso_z(at),
            "summary": title,
            "creator": {"email": ME, "self": True},
            "organizer": {"email": ME, "self": True},
            "start": when(start),
            "end": when(end),
            "iCalUID": f"{eid.split('_')[0]}@google.com",
            "sequence": sequence,
            "reminders": {"useDefault": True},
            "eventType": "default",
        }
        if series_start is not None:
            body["recurringEventId"] = SERIES
            body["originalStartTime"] = when(series_start)
        if sum(map(ord, eid)) % 3 == 0:
            body["attendees"] = [
                {"email": ME, "self": True, "responseStatus": "accepted"},
                {"email": "alex@example.com", "responseStatus": "needsAction"},
            ]
        return body

    @staticmethod
    def _cancelled(body: dict[str, Any], at: datetime) -> dict[str, Any]:
        gone = {"kind": "calendar#event", "etag": f'"{_ms(at)}x"', "id": body["id"]}
        gone["status"] = "cancelled"
        for key in ("recurringEventId", "originalStartTime"):
            if key in body:
                gone[key] = body[key]
        return gone

    def calendar_day(self, calendar: str, day: date) -> list[list[tuple[datetime, dict]]]:
        """Every event starting that day, each as its versions [(time, body)], oldest first."""
        if (calendar, day) not in self._days:
            self._days[calendar, day] = self._calendar_day(calendar, day)
        return self._days[calendar, day]

    def _calendar_day(self, calendar: str, day: date) -> list[list[tuple[datetime, dict]]]:
        r = self.rng("cal", calendar, day)
        out: list[list[tuple[datetime, dict]]] = []
        if calendar == "primary" and day.weekday() < 5 and day <= SERIES_END:
            start = _local(day, 9, 30)
            eid = f"{SERIES}_{start.astimezone(UTC):%Y%m%dT%H%M%SZ}"
            body = self._event(eid, "Team standup", start, start + timedelta(minutes=15), EPOCH)
            body["recurringEventId"] = SERIES
            body["originalStartTime"] = body["start"]
            versions = [(EPOCH, body)]
            if day.weekday() == 2 and r.random() < 0.5:
                at = start - timedelta(days=1)
                versions.append((at, self._cancelled(body, at)))
            out.append(versions)
        if calendar == "primary" and day.weekday() == 5:
            start = _local(day, 0)
            created = start - timedelta(days=10)
            body = self._event(
                f"wk{day:%Y%m%d}", "Family weekend", start, start + timedelta(days=2), created
            )
            body["start"], body["end"] = (
                {"date": day.isoformat()},
                {"date": (day + timedelta(days=2)).isoformat()},
            )
            out.append([(created, body)])
        count = r.randint(1, 3) if calendar == "primary" else int(day.weekday() < 5)
        if calendar == "primary":
            count += self.bulk
        for k in range(count):
            title = r.choice(TITLES) if calendar == "primary" else "Focus time"
            start = _local(day, r.randint(7, 20), r.choice((0, 15, 30, 45)))
            end = start + timedelta(minutes=r.choice((30, 45, 60, 90)))
            created = _local(day - timedelta(days=10), 10) + timedelta(seconds=k)
            eid = f"{calendar[0]}{day:%Y%m%d}n{k:03d}"
            versions = [(created, self._event(eid, title, start, end, created))]
            if r.random() < 0.2:
                moved = created + timedelta(days=3)
                shift = timedelta(hours=1)
                versions.append(
                    (moved, self._event(eid, title, start + shift, end + shift, moved, sequence=1))
                )
            if r.random() < 0.1:
                at = start - timedelta(days=1)
                versions.append((at, self._cancelled(versions[-1][1], at)))
            out.append(versions)
        return out

    def listing(self, answer: Any, calendar: str, bound: datetime, at: datetime) -> list[dict]:
        """answer(calendar, bound, at), kept while its pages are fetched one by one."""
        key = (answer.__name__, calendar, bound, at)
        if key not in self._lists:
            if len(self._lists) > 32:
                self._lists.clear()
            self._lists[key] = answer(calendar, bound, at)
        return self._lists[key]

    def calendar_full(self, calendar: str, time_min: datetime, now: datetime) -> list[dict]:
        """What events.list with timeMin answers: every live event ending after it."""
        items = []
        last = max(SERIES_END, (now + timedelta(days=11)).date())
        for day in _days((time_min - timedelta(days=2)).date(), last):
            for versions in self.calendar_day(calendar, day):
                body = _current(versions, now)
                if body is None or body["status"] == "cancelled":
                    continue
                if _event_end(body) > time_min:
                    items.append(body)
        return items

    def calendar_changes(self, calendar: str, since: datetime, now: datetime) -> list[dict]:
        """What events.list with a syncToken answers: every event changed in (since, now]."""
        items = []
        for day in _days((since - timedelta(days=1)).date(), (now + timedelta(days=11)).date()):
            for versions in self.calendar_day(calendar, day):
                if any(since < at <= now for at, _ in versions):
                    body = _current(versions, now)
                    if body is not None:
                        items.append(body)
        return items

    # --- WHOOP --------------------------------------------------------------------------

    def sleep_span(self, wake_day: date) -> tuple[datetime, datetime]:
        r = self.rng("sleep", wake_day)
        start = _local(wake_day - timedelta(days=1), 23) + timedelta(minutes=r.randint(-50, 40))
        end = _local(wake_day, 7) + timedelta(minutes=r.randint(-30, 45))
        return start, end

    def whoop_records(self, stream: str, now: datetime) -> list[tuple[datetime, dict]]:
        """(filter time, record) of one collection as it stands at `now`, newest first."""
        from tests.connectors.live.whoop_fakes import record_example

        out = []
        today = now.astimezone(BERLIN).date()
        for day in _days(today - timedelta(days=120), today):
            start, end = self.sleep_span(day)
            if now < start:
                continue
            r = self.rng("whoop", stream, day)
            scored = now >= end + timedelta(hours=1)
            base = {"user_id": 10129, "timezone_offset": _offset(start)}
            cycle_id = 93845 + (day - EPOCH.date()).days
            if stream == "cycle":
                nxt = self.sleep_span(day + timedelta(days=1))[0]
                done = now >= nxt
                raw = {**record_example("/v2/cycle"), **base, "id": cycle_id}
                raw.update(start=iso_z(start), end=iso_z(nxt) if done else None)
                raw.update(created_at=iso_z(start), updated_at=iso_z(min(now, nxt)))
                raw["score_state"] = "SCORED" if done else "PENDING_SCORE"
                if done:
                    raw["score"] = {**raw["score"], "average_heart_rate": r.randint(58, 72)}
                else:
                    raw.pop("score", None)
                out.append((start, raw))
            elif stream == "sleep" and now >= end + timedelta(minutes=5):
                # Re-scored three hours after the first score; a third of the sleeps are
                # edited at noon (the person woke 15 minutes later than detected).
                version = int(now >= end + timedelta(hours=4))
                changed = end
                if self.rng("wedit", day).random() < 1 / 3 and now >= _local(day, 12):
                    end, changed = end + timedelta(minutes=15), _local(day, 12)
                elif version:
                    changed = end + timedelta(hours=4)
                raw = {**record_example("/v2/activity/sleep"), **base, "id": self.uuid("s", day)}
                raw.update(cycle_id=cycle_id, start=iso_z(start), end=iso_z(end), nap=False)
                raw.update(created_at=iso_z(end + timedelta(minutes=5)), updated_at=iso_z(changed))
                raw["score_state"] = "SCORED" if scored else "PENDING_SCORE"
                if scored:
                    bed = (end - start).total_seconds() * 1000
                    rs = self.rng("whoop-score", day, version)
                    score = copy.deepcopy(raw["score"])
                    score["stage_summary"].update(
                        total_in_bed_time_milli=int(bed),
                        total_awake_time_milli=int(bed * 0.06),
                        total_light_sleep_time_milli=int(bed * rs.uniform(0.42, 0.5)),
                        total_slow_wave_sleep_time_milli=int(bed * rs.uniform(0.15, 0.22)),
                        total_rem_sleep_time_milli=int(bed * rs.uniform(0.17, 0.22)),
                    )
                    score["sleep_performance_percentage"] = r.randint(60, 99)
                    score["respiratory_rate"] = round(r.uniform(14, 17), 1)
                    raw["score"] = score
                else:
                    raw.pop("score", None)
                out.append((start, raw))
            elif stream == "recovery" and scored:
                raw = {**record_example("/v2/recovery"), **base}
                raw.pop("timezone_offset")
                made = end + timedelta(hours=1)
                raw.update(cycle_id=cycle_id, sleep_id=self.uuid("s", day), score_state="SCORED")
                raw.update(created_at=iso_z(made), updated_at=iso_z(made))
                raw["score"] = {
                    **raw["score"],
                    "recovery_score": r.randint(20, 99),
                    "resting_heart_rate": r.randint(48, 60),
                    "hrv_rmssd_milli": round(r.uniform(35, 90), 3),
                }
                out.append((made, raw))
            elif stream == "workout" and r.random() < 0.5:
                begin = _local(day, 18, r.randint(0, 59))
                finish = begin + timedelta(minutes=r.randint(25, 80))
                if now < finish + timedelta(minutes=10):
                    continue
                raw = {**record_example("/v2/activity/workout"), **base, "id": self.uuid("w", day)}
                raw.update(start=iso_z(begin), end=iso_z(finish), sport_name=r.choice(SPORTS))
                raw.update(created_at=iso_z(finish), updated_at=iso_z(finish))
                out.append((begin, raw))
        return sorted(out, key=lambda pair: pair[0], reverse=True)

    # --- Garmin -------------------------------------------------------------------------
    #
    # What Garmin holds is what the watch has uploaded: a day not yet over ends at the
    # last upload (a real recorded summary has wellnessEndTimeGmt at the last sync, hours
    # into the day) and grows with the next one; Garmin re-scores a night hours after the
    # first score; now and then the person edits their sleep window in the app.

    def garmin_uploads(self, day: date) -> list[datetime]:
        """When the watch synced on one local day: after waking, then every few hours."""
        r = self.rng("uploads", day)
        first = self.sleep_span(day)[1] + timedelta(minutes=r.randint(10, 50))
        times = [first]
        while True:
            nxt = times[-1] + timedelta(minutes=r.randint(150, 330))
            if nxt.astimezone(BERLIN).date() != day:
                return times
            times.append(nxt)

    def garmin_synced(self, now: datetime) -> datetime | None:
        """The watch's last upload at `now` (None before the first)."""
        today = now.astimezone(BERLIN).date()
        for day in (today, today - timedelta(days=1)):
            done = [t for t in self.garmin_uploads(day) if t <= now]
            if done:
                return done[-1]
        return None

    def garmin_hrv(self, lo: date, hi: date, now: datetime) -> dict[str, Any]:
        doc = _garmin_fixture("hrv-service_hrv_daily_2023-07-01_2023-07-20.json")
        template = doc["hrvSummaries"][0]
        synced = self.garmin_synced(now)
        summaries = []
        for day in _days(lo, hi):
            if synced is None or synced < self.sleep_span(day)[1]:
                continue
            value = self.rng("hrv", day).randint(32, 70)
            summaries.append(
                {**template, "calendarDate": str(day), "lastNightAvg": value, "weeklyAvg": value}
            )
        return {**doc, "hrvSummaries": summaries}

    def garmin_night(self, day: date, at: datetime) -> tuple[datetime, datetime, int]:
        """(start, end, version) of the night ending on `day` as Garmin holds it at `at`:
        version 1 is re-scored (new stage totals) six hours after waking; a third of the
        nights are edited (the person says they went to bed 25 minutes earlier) at noon."""
        start, end = self.sleep_span(day)
        r = self.rng("gnight", day)
        if r.random() < 1 / 3 and at >= _local(day, 12):
            start -= timedelta(minutes=25)
        return start, end, int(at >= end + timedelta(hours=6))

    def garmin_summaries(self, lo: date, hi: date, now: datetime) -> dict[str, Any]:
        template = _garmin_fixture("usersummary-service_daily_2025-06-14.json")
        synced = self.garmin_synced(now)
        days = []
        for day in _days(lo, hi):
            start = _local(day, 0)
            if synced is None or synced < start:
                continue
            end = _local(day + timedelta(days=1), 0)
            upto = min(end, synced)  # a day not yet over ends at the last upload
            r = self.rng("summary", day)
            elapsed = (upto - start) / (end - start)
            bed, woke, _ = self.garmin_night(day, synced)
            awake = upto >= woke
            doc = {**template, "calendarDate": str(day)}
            doc.update(
                wellnessStartTimeGmt=_garmin_stamp(start.astimezone(UTC)),
                wellnessStartTimeLocal=_garmin_stamp(start),
                wellnessEndTimeGmt=_garmin_stamp(upto.astimezone(UTC)),
                wellnessEndTimeLocal=_garmin_stamp(upto),
                totalSteps=int(r.randint(3000, 16000) * elapsed),
                restingHeartRate=r.randint(47, 60) if awake else None,
                # The average so far moves as the day goes on.
                averageStressLevel=int(r.randint(15, 40) + 10 * elapsed) if elapsed > 0.3 else -1,
                bodyBatteryAtWakeTime=r.randint(40, 95) if awake else None,
                bodyBatteryHighestValue=r.randint(60, 100) if awake else None,
                bodyBatteryLowestValue=int(r.randint(5, 40) + 40 * (1 - elapsed))
                if awake
                else None,
                bodyBatteryActivityEventList=(
                    [
                        {
                            **template["bodyBatteryActivityEventList"][0],
                            "eventStartTimeGmt": _garmin_stamp(bed.astimezone(UTC))[:-2],
                            "timezoneOffset": _ms(bed.replace(tzinfo=UTC)) - _ms(bed),
                            "durationInMilliseconds": _ms(woke) - _ms(bed),
                            "eventUpdateTimeGmt": _garmin_stamp(upto.astimezone(UTC))[:-2],
                        }
                    ]
                    if awake
                    else []
                ),
            )
            days.append(doc)
        return {"data": days}

    def garmin_sleep(self, day: date, now: datetime) -> dict[str, Any]:
        doc = _garmin_fixture("wellness-service_dailySleepData_2021-07-20.json")
        dto = doc["dailySleepDTO"]
        synced = self.garmin_synced(now)
        start, end, version = self.garmin_night(day, synced or now)
        dto["calendarDate"] = str(day)
        if synced is None or synced < end:
            for key in ("sleepStartTimestampGMT", "sleepEndTimestampGMT", "sleepScores"):
                dto[key] = None
            return doc
        seconds = (end - start).total_seconds()
        r = self.rng("gsleep", day, version)
        dto.update(
            id=_ms(start),
            sleepStartTimestampGMT=_ms(start),
            sleepEndTimestampGMT=_ms(end),
            # "Local" = wall clock as if it were UTC, each at its own instant's offset.
            sleepStartTimestampLocal=_ms(start.replace(tzinfo=UTC)),
            sleepEndTimestampLocal=_ms(end.astimezone(BERLIN).replace(tzinfo=UTC)),
            deepSleepSeconds=int(seconds * r.uniform(0.12, 0.22)),
            lightSleepSeconds=int(seconds * r.uniform(0.45, 0.55)),
            remSleepSeconds=int(seconds * r.uniform(0.15, 0.22)),
            awakeSleepSeconds=int(seconds * 0.05),
            averageRespirationValue=round(r.uniform(13, 17), 1),
        )
        dto["sleepScores"] = {"overall": {"value": r.randint(55, 95), "qualifierKey": "GOOD"}}
        return doc

    def garmin_heart_rate(self, day: date, now: datetime) -> dict[str, Any]:
        doc = _garmin_fixture("wellness-service_dailyHeartRate_2026-01-07.json")
        start, end = _local(day, 0), _local(day + timedelta(days=1), 0)
        doc.update(
            calendarDate=str(day),
            startTimestampGMT=_garmin_stamp(start.astimezone(UTC)),
            endTimestampGMT=_garmin_stamp(end.astimezone(UTC)),
            startTimestampLocal=_garmin_stamp(start),
            endTimestampLocal=_garmin_stamp(end),
        )
        r = self.rng("hr", day)
        synced = self.garmin_synced(now)
        values = []
        t = start
        while synced is not None and t < min(end, synced):
            values.append([_ms(t), r.randint(52, 110) if r.random() > 0.03 else None])
            t += timedelta(minutes=2)
        doc["heartRateValues"] = values
        return doc

    # --- .ics feed ----------------------------------------------------------------------

    def ics_feed(self, now: datetime) -> tuple[str, str]:
        """(body, etag): a weekly dinner series plus one school event per week so far."""
        week = (now - EPOCH) // TOKEN_WEEK
        lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//rhythm-bridge//fake//EN"]
        lines += [
            "BEGIN:VEVENT",
            "UID:family-dinner@example.com",
            "DTSTAMP:20260101T000000Z",
            "DTSTART;TZID=Europe/Berlin:20260104T180000",
            "DTEND;TZID=Europe/Berlin:20260104T193000",
            "RRULE:FREQ=WEEKLY;BYDAY=SU",
            "SUMMARY:Family dinner",
            "END:VEVENT",
        ]
        for w in range(max(0, week - 8), week + 1):
            day = (EPOCH + w * TOKEN_WEEK).astimezone(BERLIN).date() + timedelta(days=4)
            lines += [
                "BEGIN:VEVENT",
                f"UID:school-{w}@example.com",
                "DTSTAMP:20260101T000000Z",
                f"DTSTART;TZID=Europe/Berlin:{day:%Y%m%d}T163000",
                f"DTEND;TZID=Europe/Berlin:{day:%Y%m%d}T173000",
                f"SUMMARY:Parents' evening week {w}",
                "END:VEVENT",
            ]
        lines.append("END:VCALENDAR")
        return "\r\n".join(lines) + "\r\n", f'"week-{week}"'


def _current(versions: list[tuple[datetime, dict]], now: datetime) -> dict | None:
    body = None
    for at, version in versions:
        if at <= now:
            body = version
    return body


def _event_end(body: dict[str, Any]) -> datetime:
    end = body["end"]
    if "date" in end:
        day = date.fromisoformat(end["date"])
        return _local(day, 0)
    return datetime.fromisoformat(end["dateTime"])


_FIXTURE_CACHE: dict[str, str] = {}


def _garmin_fixture(name: str) -> Any:
    if name not in _FIXTURE_CACHE:
        _FIXTURE_CACHE[name] = (GARMIN / name).read_text()
    return json.loads(_FIXTURE_CACHE[name])


def garmin_jwt(exp: float) -> str:
    """A bearer token shaped like Garmin's: a JWT whose `exp` claim the connector reads."""

    def part(doc: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256'})}.{part({'sub': 'me', 'exp': int(exp)})}.signature-bytes"


def provider_settings(base: str) -> dict[str, Any]:
    """The [sources] config that points every connector at a fake served from `base`."""
    return {
        "google_calendar": {
            "enabled": True,
            "calendars": list(CALENDARS),
            "api_base_url": base + GOOGLE_BASE,
            "token_url": base + "/google/token",
        },
        "whoop": {
            "enabled": True,
            "client_id": "fake-whoop-client",
            "api_base_url": base + WHOOP_BASE,
            "token_url": base + "/whoop/token",
        },
        "garmin": {
            "enabled": True,
            "api_base_url": base + GARMIN_BASE,
            "token_url": base + "/garmin/token",
        },
        "ics": {"enabled": True, "urls": [base + "/feeds/family.ics"]},
    }


class FakeAPIs:
    """The server and its state: clock, issued tokens, fault plan, request counts."""

    def __init__(
        self,
        *,
        now: datetime | None = None,
        faults: bool = False,
        outage: tuple[datetime, datetime] | None = None,
        world: World | None = None,
    ) -> None:
        self.world = world or World()
        self.fixed_now = now
        self.faults = faults
        self.outage = outage
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.api_requests = 0
        self.google_access: set[str] = set()
        # Scopes per refresh token (the consent it came from) and per access token issued
        # for it; a refresh token not named here was given calendar.readonly.
        self.google_grants: dict[str, set[str]] = {}
        self.google_scopes: dict[str, set[str]] = {}
        self.google_revoked: set[str] = set()
        # Events written through the API, per calendar and id, deleted ones kept as
        # cancelled (as Google does: their ids stay taken); what any client added.
        self.written: dict[str, dict[str, dict[str, Any]]] = {c: {} for c in CALENDARS}
        # Set by tests: the statuses the next write requests answer instead (503, 429, ...).
        self.write_faults: list[int] = []
        self.write_log: list[tuple[str, str, str]] = []  # (method, calendar, event id)
        self.read_only_calendars: set[str] = set()  # shared with the person read-only
        self.whoop_access: set[str] = set()
        self.whoop_refresh = "whoop-refresh-0"
        # Set by tests: a request for this path blocks until the event is set.
        self.hold: tuple[str, threading.Event, threading.Event] | None = None
        handler = type("Handler", (_Handler,), {"fake": self})
        self.server = _Server(("127.0.0.1", 0), handler)
        self.thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def now(self) -> datetime:
        return self.fixed_now or datetime.now(UTC)

    def settings(self) -> dict[str, Any]:
        return provider_settings(self.url)

    def start(self) -> FakeAPIs:
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self.thread is not None:
            self.thread.join()

    def __enter__(self) -> FakeAPIs:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def fault(self) -> str | None:
        """The fault this API request gets, if any (decided by the request's number)."""
        with self.lock:
            self.api_requests += 1
            n = self.api_requests
        kind = None
        if self.outage and self.outage[0] <= self.now() < self.outage[1]:
            kind = "outage"
        elif self.faults:
            kind = (
                "drop" if n % 131 == 0 else "429" if n % 89 == 0 else "503" if n % 53 == 0 else None
            )
        if kind:
            self.counts[f"fault:{kind}"] += 1
        return kind


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client hanging up (or a dropped-connection fault) is normal here; the rest is not.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeAPIs
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: with Nagle's algorithm each answer on a
    # kept-alive connection waits for the client's delayed ACK (40 ms).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: callers read /_stats instead of a log line per request."""

    # --- plumbing -----------------------------------------------------------------------

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = (
            b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        )
        self.send_response(status)
        kind = "application/json; charset=UTF-8"
        for key, value in {"Content-Type": kind, **(headers or {})}.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _form(self) -> dict[str, str]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode()
        if self.headers.get("Content-Type", "").startswith("application/json"):
            return json.loads(raw or "{}")
        return {k: v[0] for k, v in parse_qs(raw).items()}

    def _bearer(self) -> str:
        return self.headers.get("Authorization", "").removeprefix("Bearer ")

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        fake, form = self.fake, self._form()
        fake.counts[path] += 1
        now = fake.now()
        if path == "/_clock":
            fake.fixed_now = datetime.fromisoformat(form["now"])
            fake.faults = bool(form.get("faults", fake.faults))
            return self._send(204)
        if path == "/google/token":
            assert form.get("grant_type") == "refresh_token", form
            refresh = form.get("refresh_token", "")
            if refresh in fake.google_revoked:
                # Google's answer for a refresh token the person revoked (or that expired).
                return self._send(
                    400,
                    {
                        "error": "invalid_grant",
                        "error_description": "Token has been expired or revoked.",
                    },
                )
            token = f"google-access-{fake.counts[path]}"
            scopes = fake.google_grants.get(refresh, {READONLY})
            fake.google_access.add(token)
            fake.google_scopes[token] = scopes
            return self._send(
                200,
                {
                    "access_token": token,
                    "expires_in": 3599,
                    "scope": " ".join(sorted(scopes)),
                    "token_type": "Bearer",
                },
            )
        if path.startswith(GOOGLE_BASE):
            return self._google_write("POST", path[len(GOOGLE_BASE) :], form, now)
        if path == "/whoop/token":
            with fake.lock:
                if form.get("refresh_token") != fake.whoop_refresh:
                    return self._send(400, {"error": "invalid_grant"})
                n = fake.counts[path]
                fake.whoop_refresh = f"whoop-refresh-{n}"
                fake.whoop_access.add(f"whoop-access-{n}")
            body = {
                "access_token": f"whoop-access-{n}",
                "refresh_token": fake.whoop_refresh,
                "expires_in": 3600,
                "scope": "offline read:sleep read:recovery read:cycles read:workout",
                "token_type": "bearer",
            }
            return self._send(200, body)
        if path == "/garmin/token":
            return self._send(
                200,
                garmin_jwt((now + timedelta(hours=24)).timestamp()).encode(),
                {"Content-Type": "text/plain"},
            )
        self._send(404, {"error": "not found"})

    def do_GET(self) -> None:
        split = urlsplit(self.path)
        path, query = split.path, {k: v[0] for k, v in parse_qs(split.query).items()}
        fake = self.fake
        fake.counts[path.split("/", 2)[1] if path.count("/") > 1 else path] += 1
        if path == "/_stats":
            return self._send(200, {"counts": fake.counts, "api_requests": fake.api_requests})
        if fake.hold and fake.hold[0] in self.path:
            fake.hold[1].set()
            fake.hold[2].wait(60)
        fault = fake.fault()
        if fault in ("drop", "outage"):
            self.close_connection = True
            self.connection.shutdown(2)  # no answer at all, like a reset link
            return
        if fault == "503":
            return self._send(503, {"error": "backend unavailable"})
        if fault == "429":
            return self._send(429, {"error": "rate limited"}, {"Retry-After": "2"})
        now = fake.now()
        if path.startswith(GOOGLE_BASE):
            return self._google(path[len(GOOGLE_BASE) :], query, now)
        if path.startswith(WHOOP_BASE):
            return self._whoop(path[len(WHOOP_BASE) :], query, now)
        if path.startswith(GARMIN_BASE):
            return self._garmin(path[len(GARMIN_BASE) :], query, now)
        if path == "/feeds/family.ics":
            body, etag = fake.world.ics_feed(now)
            if self.headers.get("If-None-Match") == etag:
                return self._send(304)
            headers = {"Content-Type": "text/calendar", "ETag": etag}
            headers["Last-Modified"] = format_datetime(now.astimezone(UTC), usegmt=True)
            return self._send(200, body.encode(), headers)
        self._send(404, {"error": "not found"})

    # --- providers ----------------------------------------------------------------------

    def do_PATCH(self) -> None:
        self._write_method("PATCH")

    def do_DELETE(self) -> None:
        self._write_method("DELETE")

    def _write_method(self, method: str) -> None:
        path = urlsplit(self.path).path
        fake = self.fake
        fake.counts[f"{method} {path.split('/', 2)[1]}"] += 1
        body = self._form() if method == "PATCH" else {}
        if not path.startswith(GOOGLE_BASE):
            return self._send(404, {"error": "not found"})
        self._google_write(method, path[len(GOOGLE_BASE) :], body, fake.now())

    def _google_error(self, status: int, reason: str, message: str, domain: str = "global"):
        """An error the way the Calendar API answers it (developers.google.com/workspace/
        calendar/api/guides/errors): the code and message twice, the reason in errors[]."""
        error = {"errors": [{"domain": domain, "reason": reason, "message": message}]}
        error.update({"code": status, "message": message})
        return self._send(status, {"error": error})

    def _google_write(self, method: str, rest: str, body: dict[str, Any], now: datetime) -> None:
        """events.insert (POST .../events), events.patch (PATCH .../events/ID) and
        events.delete (DELETE .../events/ID), following the Calendar API's documented
        behaviour: a client-chosen id must be base32hex of 5-1024 characters and unique in
        the calendar, deleted events included (409 duplicate); a deleted event stays as
        cancelled, so deleting it again answers 410 and patching it brings it back; an id
        never used answers 404; writing needs the calendar.events (or calendar) scope."""
        parts = rest.split("/")
        if self._google_write_refused(parts):
            return None
        fake = self.fake
        calendar = unquote(parts[1])
        recent = fake.world.calendar_full(calendar, now - timedelta(days=30), now)
        taken = fake.written[calendar].keys() | {e["id"] for e in recent}
        if len(parts) == 3:
            if method != "POST":
                return self._google_error(404, "notFound", "Not Found")
            return self._google_insert(calendar, body, now, taken)
        eid = unquote(parts[3])
        return self._google_change(method, calendar, eid, body=body, now=now, taken=taken)

    def _google_write_refused(self, parts: list[str]) -> bool:
        """Whether a write was answered before it reached an event: no or a read-only
        token, no such calendar, a calendar shared read-only, or a fault to inject."""
        fake = self.fake
        token = self._bearer()
        if token not in fake.google_access:
            self._google_error(401, "authError", "Invalid Credentials")
            return True
        if not fake.google_scopes.get(token, set()) & WRITE_SCOPES:
            # What Google answers a token whose consent lacks a write scope.
            self._google_error(
                403, "insufficientPermissions", "Request had insufficient authentication scopes."
            )
            return True
        if len(parts) not in (3, 4) or parts[0] != "calendars" or parts[2] != "events":
            self._google_error(404, "notFound", "Not Found")
            return True
        calendar = unquote(parts[1])
        if calendar not in CALENDARS:
            self._google_error(404, "notFound", "Not Found")
            return True
        if calendar in fake.read_only_calendars:
            # A calendar shared with the person without write access.
            self._google_error(
                403, "requiredAccessLevel", "You need to have writer access to this calendar."
            )
            return True
        if not fake.write_faults:
            return False
        status = fake.write_faults.pop(0)
        if status == 0:  # a dropped connection
            self.close_connection = True
            self.connection.shutdown(2)
        elif status == 429:
            self._google_error(429, "rateLimitExceeded", "Rate Limit Exceeded", "usageLimits")
        else:
            self._google_error(status, "backendError", "Backend Error")
        return True

    def _google_insert(
        self, calendar: str, body: dict[str, Any], now: datetime, taken: set[str]
    ) -> None:
        """events.insert."""
        fake = self.fake
        events = fake.written[calendar]
        eid = body.get("id") or uuid.uuid4().hex  # hex digits are base32hex too
        if not (5 <= len(eid) <= 1024 and set(eid) <= BASE32HEX):
            return self._google_error(400, "invalid", "Invalid resource id value.")
        if eid in taken:
            return self._google_error(409, "duplicate", "The requested identifier already exists.")
        if "start" not in body or "end" not in body:
            return self._google_error(400, "required", "Missing end time.")
        event = {
            **copy.deepcopy(body),
            "kind": "calendar#event",
            "id": eid,
            "status": body.get("status", "confirmed"),
            "created": iso_z(now),
            "updated": iso_z(now),
            "sequence": 0,
            "etag": f'"{_ms(now)}0"',
            "iCalUID": f"{eid}@google.com",
            "htmlLink": f"https://calendar.example/event?eid={eid}",
            "creator": {"email": ME, "self": True},
            "organizer": {"email": ME, "self": True},
        }
        events[eid] = event
        fake.write_log.append(("insert", calendar, eid))
        return self._send(200, event)

    def _google_change(
        self,
        method: str,
        calendar: str,
        eid: str,
        *,
        body: dict[str, Any],
        now: datetime,
        taken: set[str],
    ) -> None:
        """events.patch and events.delete."""
        fake = self.fake
        event = fake.written[calendar].get(eid)
        if event is None:
            if eid in taken:
                # One of the world's events (the person's own): Google would let its owner
                # change it; this fake does not model that, and logs the attempt for the
                # tests that check it never happens.
                fake.write_log.append((method.lower(), calendar, eid))
                return self._send(501, {"error": "the fake does not change the world's events"})
            return self._google_error(404, "notFound", "Not Found")
        if method == "DELETE":
            if event["status"] == "cancelled":
                return self._google_error(410, "deleted", "Resource has been deleted")
            event.update(status="cancelled", updated=iso_z(now))
            fake.write_log.append(("delete", calendar, eid))
            return self._send(204)
        _merge(event, {k: v for k, v in body.items() if k not in ("id", "kind", "etag")})
        event["sequence"] += 1
        event["updated"] = iso_z(now)
        event["etag"] = f'"{_ms(now)}{event["sequence"]}"'
        fake.write_log.append(("patch", calendar, eid))
        return self._send(200, event)

    def _google(self, rest: str, query: dict[str, str], now: datetime) -> None:
        token = self._bearer()
        if token not in self.fake.google_access:
            return self._send(401, {"error": {"code": 401, "message": "Invalid Credentials"}})
        parts = rest.split("/")
        if len(parts) == 4 and parts[0] == "calendars" and parts[2] == "events":
            # events.get: a deleted event is still answered, as cancelled.
            event = self.fake.written.get(unquote(parts[1]), {}).get(unquote(parts[3]))
            if event is None:
                return self._google_error(404, "notFound", "Not Found")
            return self._send(200, event)
        if len(parts) != 3 or parts[0] != "calendars" or parts[2] != "events":
            return self._send(404, {"error": {"code": 404, "message": "Not Found"}})
        calendar = unquote(parts[1])
        if calendar not in CALENDARS:
            return self._send(404, {"error": {"code": 404, "message": "Not Found"}})
        # The page token carries the snapshot instant, so paging sees one consistent state.
        offset, at = 0, now
        if "pageToken" in query:
            first, _, stamp = query["pageToken"].partition("@")
            offset, at = int(first), datetime.fromisoformat(stamp)
        world = self.fake.world
        if "syncToken" in query:
            since = datetime.fromtimestamp(int(query["syncToken"].removeprefix("s")) / 1000, UTC)
            if (since - EPOCH) // TOKEN_WEEK != (at - EPOCH) // TOKEN_WEEK:
                error = {
                    "code": 410,
                    "message": "Sync token is no longer valid, a full sync is required.",
                }
                error["errors"] = [{"domain": "global", "reason": "fullSyncRequired"}]
                return self._send(410, {"error": error})
            items = world.listing(world.calendar_changes, calendar, since, at)
            items = items + [
                e
                for e in self.fake.written[calendar].values()
                if since < datetime.fromisoformat(e["updated"].replace("Z", "+00:00")) <= at
            ]
        else:
            time_min = datetime.fromisoformat(query["timeMin"].replace("Z", "+00:00"))
            items = world.listing(world.calendar_full, calendar, time_min, at)
            items = items + [
                e for e in self.fake.written[calendar].values() if e["status"] != "cancelled"
            ]
        size = min(int(query.get("maxResults", 250)), GOOGLE_PAGE)
        page = items[offset : offset + size]
        body: dict[str, Any] = {
            "kind": "calendar#events",
            "etag": f'"{_ms(at)}"',
            "summary": calendar if calendar != "primary" else ME,
            "updated": iso_z(at),
            "timeZone": "Europe/Berlin",
            "accessRole": "owner",
            "defaultReminders": [{"method": "popup", "minutes": 10}],
            "items": page,
        }
        if offset + size < len(items):
            body["nextPageToken"] = f"{offset + size}@{at.isoformat()}"
        else:
            body["nextSyncToken"] = f"s{_ms(at)}"
        self._send(200, body)

    def _whoop(self, rest: str, query: dict[str, str], now: datetime) -> None:
        if self._bearer() not in self.fake.whoop_access:
            return self._send(401, {"error": "unauthorized"})
        streams = {
            "/v2/cycle": "cycle",
            "/v2/activity/sleep": "sleep",
            "/v2/recovery": "recovery",
            "/v2/activity/workout": "workout",
        }
        if rest not in streams:
            return self._send(404, {"error": "not found"})
        lo = datetime.fromisoformat(query["start"].replace("Z", "+00:00"))
        hi = datetime.fromisoformat(query["end"].replace("Z", "+00:00"))
        assert int(query["limit"]) <= WHOOP_PAGE
        records = [
            raw for at, raw in self.fake.world.whoop_records(streams[rest], now) if lo <= at < hi
        ]
        offset = int(query.get("nextToken", "0"))
        body: dict[str, Any] = {"records": records[offset : offset + WHOOP_PAGE]}
        if offset + WHOOP_PAGE < len(records):
            body["next_token"] = str(offset + WHOOP_PAGE)
        self._send(200, body)

    def _garmin(self, rest: str, query: dict[str, str], now: datetime) -> None:
        token = self._bearer()
        try:
            claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
        except (IndexError, ValueError):
            return self._send(401, {"error": "unauthorized"})
        if claims["exp"] < now.timestamp():
            return self._send(401, {"error": "token expired"})
        world = self.fake.world
        if rest.startswith("/hrv-service/hrv/daily/"):
            lo, hi = (date.fromisoformat(p) for p in rest.rsplit("/", 2)[1:])
            assert (hi - lo).days < 28
            return self._send(200, world.garmin_hrv(lo, hi, now))
        if rest == "/usersummary-service/v2/dailysummaries":
            lo, hi = date.fromisoformat(query["startDate"]), date.fromisoformat(query["endDate"])
            assert (hi - lo).days < 28
            return self._send(200, world.garmin_summaries(lo, hi, now))
        if rest == "/sleep-service/sleep/dailySleep":
            return self._send(200, world.garmin_sleep(date.fromisoformat(query["date"]), now))
        if rest == "/wellness-service/wellness/dailyHeartRate":
            day = date.fromisoformat(query["date"])
            if now < _local(day, 0):
                return self._send(204)
            return self._send(200, world.garmin_heart_rate(day, now))
        self._send(404, {"error": "not found"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", action="store_true")
    parser.add_argument("--outage", nargs=2, metavar=("FROM", "TO"), help="ISO instants")
    parser.add_argument("--now", help="the initial simulated instant (ISO)")
    args = parser.parse_args()
    outage = tuple(datetime.fromisoformat(t) for t in args.outage) if args.outage else None
    now = datetime.fromisoformat(args.now) if args.now else None
    fake = FakeAPIs(now=now, faults=args.faults, outage=outage).start()  # type: ignore[arg-type]
    print(f"port {fake.port}", flush=True)
    sys.stdin.read()  # the parent closes stdin (or dies) to stop us
    fake.stop()


if __name__ == "__main__":
    main()
