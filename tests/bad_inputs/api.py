"""The bad-input corpus of the API response parsers: WHOOP v2, Google Calendar, Garmin.

    python -m tests.bad_inputs.api    # list the cases and the size of each answer

Each case is what one or two endpoints answer in an otherwise normal pull (the other
endpoints answer the good bodies of tests/fixtures); tests/bad_inputs/test_api.py runs it
through the connector's real `pull` and `bridge.intake.sources.run_source`. `expect` is as for the
file corpus: "error" (one clear line naming the source, nothing stored, cursors unchanged),
"skip" (the bad records skipped and counted, the good ones in the same answer kept) or
"accept" (odd but usable: stored, long text clipped, in bounded memory).

Malicious XML (external entities, billion laughs) and zip-slip paths have no analogue
here: the three APIs answer JSON only, parsed by `json` (no entities, no DTD, no archive
members). The zip bomb's analogue is a gzip `Content-Encoding` bomb: 1 GiB of spaces that
compresses to about 1 MB.
"""

from __future__ import annotations

import functools
import json
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.connectors.live.whoop_fakes import record_example
from tests.shared import shared_path

GARMIN = shared_path("garmin", "connect_api")
HUGE = "W" * 20_000_000  # far beyond every text column (see connectors/validate.py)
DEPTH = 100_000


@dataclass(frozen=True)
class Answer:
    body: bytes | Callable[[], Iterator[bytes]]  # a callable streams it in chunks
    headers: dict[str, str] = field(
        default_factory=lambda: {"content-type": "application/json; charset=UTF-8"}
    )


@dataclass(frozen=True)
class ApiCase:
    api: str  # "whoop", "garmin" or "google_calendar"
    name: str
    expect: str  # "error", "skip" or "accept"
    # endpoint path (WHOOP, Garmin; "events" for Google) -> its answer, built when run
    answers: Callable[[], dict[str, Answer]]


def _json(doc: Any) -> Answer:
    return Answer(json.dumps(doc).encode())


def _raw(text: bytes) -> Answer:
    return Answer(text)


def _truncated(doc: Any) -> Answer:
    text = json.dumps(doc).encode()
    return Answer(text[: len(text) * 2 // 3])


def _encoded(doc: Any, encoding: str) -> Answer:
    # Still labelled UTF-8 by the server.
    return Answer(json.dumps(doc, ensure_ascii=False).encode(encoding))


def _nested(key: str) -> Answer:
    return Answer(b'{"' + key.encode() + b'": ' + b"[" * DEPTH + b"]" * DEPTH + b"}")


@functools.cache
def _bomb_chunks() -> tuple[bytes, ...]:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip framing
    out = [packer.compress(b'{"records": [], "items": [], "pad": "')]
    block = b" " * (1 << 20)
    out += [packer.compress(block) for _ in range(1024)]
    out.append(packer.compress(b'"}') + packer.flush())
    data = b"".join(out)
    return tuple(data[i : i + (64 << 10)] for i in range(0, len(data), 64 << 10))


def gzip_bomb() -> Answer:
    """1 GiB of JSON whitespace, gzip-compressed to about 1 MB, sent in 64 KB chunks."""
    return Answer(
        lambda: iter(_bomb_chunks()),
        {"content-type": "application/json; charset=UTF-8", "content-encoding": "gzip"},
    )


# --- WHOOP v2 -------------------------------------------------------------------------

CYCLE, SLEEP, RECOVERY, WORKOUT = (
    "/v2/cycle",
    "/v2/activity/sleep",
    "/v2/recovery",
    "/v2/activity/workout",
)


def whoop_page(path: str, *records: dict[str, Any]) -> dict[str, Any]:
    return {"records": list(records) or [record_example(path)]}


def _whoop(path: str, score: dict[str, Any] | None = None, **changes: Any) -> dict[str, Any]:
    """The spec's example record of a collection with some fields (and score fields) changed."""
    record = {**record_example(path), **changes}
    if score:
        record["score"] = {**record["score"], **score}
    return record


def _whoop_nulls() -> dict[str, Any]:
    return {key: None for key in record_example(CYCLE)}


def _recoveries_with_hrv(hrv: Any) -> Answer:
    """The good recovery, and one of a sleep outside the window (so dated at its creation,
    another instant) with this RMSSD."""
    other = _whoop(
        RECOVERY,
        {"hrv_rmssd_milli": hrv},
        sleep_id="00000000-0000-0000-0000-000000000000",
        created_at="2022-04-25T11:25:44.774Z",
    )
    return _json(whoop_page(RECOVERY, record_example(RECOVERY), other))


WHOOP_CASES = [
    ApiCase("whoop", "truncated-json", "error", lambda: {CYCLE: _truncated(whoop_page(CYCLE))}),
    ApiCase("whoop", "empty-body", "error", lambda: {CYCLE: _raw(b"")}),
    # No "records" key is read as an empty page: the other collections are stored.
    ApiCase("whoop", "empty-object", "accept", lambda: {CYCLE: _json({})}),
    ApiCase("whoop", "list-not-object", "error", lambda: {CYCLE: _json([whoop_page(CYCLE)])}),
    ApiCase("whoop", "records-a-string", "error", lambda: {CYCLE: _json({"records": "abc"})}),
    ApiCase(
        "whoop",
        "score-a-string",
        "skip",
        lambda: {RECOVERY: _recoveries_with_hrv("x")},
    ),
    ApiCase(
        "whoop",
        "null-everywhere",
        "skip",
        lambda: {CYCLE: _json(whoop_page(CYCLE, record_example(CYCLE), _whoop_nulls()))},
    ),
    ApiCase(
        "whoop",
        "latin1-as-utf8",
        "error",
        lambda: {
            WORKOUT: _encoded(whoop_page(WORKOUT, _whoop(WORKOUT, sport_name="sörf")), "latin-1")
        },
    ),
    ApiCase(
        "whoop", "utf16-as-utf8", "error", lambda: {CYCLE: _encoded(whoop_page(CYCLE), "utf-16")}
    ),
    ApiCase(
        "whoop", "invalid-utf8", "error", lambda: {CYCLE: _raw(b'{"records": ["\xff\xfe\xc3"]}')}
    ),
    # A 20 MB sport name: the workout is stored with its label clipped to the column.
    ApiCase(
        "whoop",
        "huge-field",
        "accept",
        lambda: {WORKOUT: _json(whoop_page(WORKOUT, _whoop(WORKOUT, sport_name=HUGE)))},
    ),
    ApiCase("whoop", "deeply-nested", "error", lambda: {CYCLE: _nested("records")}),
    ApiCase(
        "whoop",
        "out-of-range",
        "skip",
        lambda: {
            RECOVERY: _recoveries_with_hrv(-5),
            SLEEP: _json(
                whoop_page(
                    SLEEP,
                    record_example(SLEEP),
                    _whoop(
                        SLEEP, id="s1900", start="1900-01-01T22:00:00Z", end="1900-01-02T06:00:00Z"
                    ),
                    _whoop(
                        SLEEP, id="s2200", start="2200-01-01T22:00:00Z", end="2200-01-02T06:00:00Z"
                    ),
                )
            ),
        },
    ),
    ApiCase(
        "whoop",
        "nan-infinity",
        "skip",
        lambda: {
            CYCLE: _raw(
                json.dumps(
                    whoop_page(
                        CYCLE,
                        record_example(CYCLE),
                        _whoop(
                            CYCLE,
                            {"average_heart_rate": 1e400},
                            start="2022-04-23T01:00:00Z",
                            end="2022-04-23T09:00:00Z",
                        ),
                        _whoop(
                            CYCLE,
                            {"average_heart_rate": float("nan")},
                            start="2022-04-22T01:00:00Z",
                            end="2022-04-22T09:00:00Z",
                        ),
                    )
                ).encode()
            )
        },
    ),
    ApiCase("whoop", "gzip-bomb", "error", lambda: {CYCLE: gzip_bomb()}),
]


# --- Garmin Connect Personal API ------------------------------------------------------

HRV = "/hrv-service/hrv/daily/"  # + first/last day; answers match by prefix
SUMMARIES = "/usersummary-service/v2/dailysummaries"
DAILY_SLEEP = "/sleep-service/sleep/dailySleep"
HEART_RATE = "/wellness-service/wellness/dailyHeartRate"


def garmin_body(name: str) -> Any:
    return json.loads((GARMIN / name).read_text())


def garmin_hrv() -> dict[str, Any]:
    return garmin_body("hrv-service_hrv_daily_2023-07-01_2023-07-20.json")


def garmin_day(**changes: Any) -> dict[str, Any]:
    return {**garmin_body("usersummary-service_daily_2025-06-14.json"), **changes}


def garmin_sleep(**changes: Any) -> dict[str, Any]:
    doc = garmin_body("wellness-service_dailySleepData_2021-07-20.json")
    doc["dailySleepDTO"] = {**doc["dailySleepDTO"], **changes}
    return doc


def _days_at(day: str) -> dict[str, str]:
    return {
        "calendarDate": day,
        "wellnessStartTimeGmt": f"{day}T22:00:00.0",
        "wellnessStartTimeLocal": f"{day}T00:00:00.0",
        "wellnessEndTimeGmt": f"{day}T23:59:00.0",
    }


def _hrv_with(**changes: Any) -> dict[str, Any]:
    doc = garmin_hrv()
    doc["hrvSummaries"] = [*doc["hrvSummaries"][:3], {**doc["hrvSummaries"][3], **changes}]
    return doc


GARMIN_CASES = [
    ApiCase("garmin", "truncated-json", "error", lambda: {HRV: _truncated(garmin_hrv())}),
    # Garmin answers 200 with an empty body for a day without data: nothing to store.
    ApiCase("garmin", "empty-body", "accept", lambda: {HRV: _raw(b"")}),
    ApiCase("garmin", "empty-object", "accept", lambda: {HRV: _json({}), DAILY_SLEEP: _json({})}),
    ApiCase("garmin", "list-not-object", "error", lambda: {HRV: _json([garmin_hrv()])}),
    ApiCase("garmin", "summaries-a-string", "error", lambda: {SUMMARIES: _json({"data": "abc"})}),
    ApiCase(
        "garmin",
        "steps-a-string",
        "skip",
        lambda: {
            SUMMARIES: _json(
                {"data": [garmin_day(), garmin_day(totalSteps="lots", **_days_at("2023-07-19"))]}
            )
        },
    ),
    # Garmin sends null for every metric it has no data for: nothing stored, nothing wrong.
    ApiCase(
        "garmin",
        "null-everywhere",
        "accept",
        lambda: {
            DAILY_SLEEP: _json(
                {k: None for k in garmin_body("wellness-service_dailySleepData_2021-07-20.json")}
            )
        },
    ),
    ApiCase(
        "garmin",
        "latin1-as-utf8",
        "error",
        lambda: {SUMMARIES: _encoded({"data": [garmin_day(userName="Sören")]}, "latin-1")},
    ),
    ApiCase("garmin", "utf16-as-utf8", "error", lambda: {HRV: _encoded(garmin_hrv(), "utf-16")}),
    ApiCase(
        "garmin", "invalid-utf8", "error", lambda: {HRV: _raw(b'{"hrvSummaries": "\xc3\x28"}')}
    ),
    ApiCase(
        "garmin",
        "huge-field",
        "accept",
        lambda: {DAILY_SLEEP: _json(garmin_sleep(sleepQualityTypePK=HUGE))},
    ),
    ApiCase("garmin", "deeply-nested", "error", lambda: {HRV: _nested("hrvSummaries")}),
    ApiCase(
        "garmin",
        "out-of-range",
        "skip",
        lambda: {
            HRV: _json(_hrv_with(lastNightAvg=-5)),
            SUMMARIES: _json(
                {
                    "data": [
                        garmin_day(),
                        garmin_day(totalSteps=1e12, **_days_at("2023-07-18")),
                        garmin_day(**_days_at("1900-01-01")),
                        garmin_day(**_days_at("2200-01-01")),
                    ]
                }
            ),
        },
    ),
    ApiCase(
        "garmin",
        "nan-infinity",
        "skip",
        lambda: {
            HRV: _raw(json.dumps(_hrv_with(lastNightAvg=float("nan"))).encode()),
            DAILY_SLEEP: _raw(
                json.dumps(
                    garmin_sleep(sleepStartTimestampGMT=1e300, averageRespirationValue=float("inf"))
                ).encode()
            ),
        },
    ),
    ApiCase("garmin", "gzip-bomb", "error", lambda: {SUMMARIES: gzip_bomb()}),
]


# --- Google Calendar API v3 -----------------------------------------------------------

EVENTS = "events"
SYNC = "sync-token-1"


def google_event(eid: str = "good1", day: str = "2026-11-20", **changes: Any) -> dict[str, Any]:
    return {
        "kind": "calendar#event",
        "id": eid,
        "status": "confirmed",
        "summary": "Planning",
        "start": {"dateTime": f"{day}T10:00:00+01:00", "timeZone": "Europe/Berlin"},
        "end": {"dateTime": f"{day}T11:00:00+01:00", "timeZone": "Europe/Berlin"},
        "eventType": "default",
        **changes,
    }


def google_page(*items: dict[str, Any], sync: str | None = SYNC) -> dict[str, Any]:
    page: dict[str, Any] = {"kind": "calendar#events", "items": list(items) or [google_event()]}
    if sync:
        page["nextSyncToken"] = sync
    return page


def _google(page: Any) -> Callable[[], dict[str, Answer]]:
    return lambda: {EVENTS: _json(page)}


GOOGLE_CASES = [
    ApiCase(
        "google_calendar", "truncated-json", "error", lambda: {EVENTS: _truncated(google_page())}
    ),
    ApiCase("google_calendar", "empty-body", "error", lambda: {EVENTS: _raw(b"")}),
    # Without nextSyncToken a full list cannot be trusted to be whole: nothing is cancelled.
    ApiCase("google_calendar", "empty-object", "error", _google({})),
    ApiCase("google_calendar", "list-not-object", "error", _google([google_page()])),
    ApiCase(
        "google_calendar",
        "items-a-string",
        "error",
        _google({"items": "abc", "nextSyncToken": SYNC}),
    ),
    ApiCase(
        "google_calendar",
        "wrong-field-types",
        "skip",
        _google(
            google_page(
                google_event(),
                google_event("typed1", summary=42),
                google_event("typed2", status=["confirmed"], eventType=7),
                google_event("bad1", start="tomorrow"),
                google_event("bad2", attendees="everyone"),
                "not-an-event",
            )
        ),
    ),
    # The stored event comes back unreadable: skipped, and not taken for deleted either.
    ApiCase(
        "google_calendar",
        "stored-event-now-malformed",
        "skip",
        _google(google_page(google_event(summary=["Planning"]), google_event("good2"))),
    ),
    ApiCase(
        "google_calendar",
        "null-everywhere",
        "skip",
        _google(google_page(google_event(), {k: None for k in google_event()})),
    ),
    ApiCase(
        "google_calendar",
        "latin1-as-utf8",
        "error",
        lambda: {EVENTS: _encoded(google_page(google_event(summary="Sören")), "latin-1")},
    ),
    ApiCase(
        "google_calendar",
        "utf16-as-utf8",
        "error",
        lambda: {EVENTS: _encoded(google_page(), "utf-16")},
    ),
    ApiCase(
        "google_calendar",
        "invalid-utf8",
        "error",
        lambda: {EVENTS: _raw(b'{"items": ["\xed\xa0\x80"]}')},
    ),
    # A 20 MB title is clipped to the column (connectors/validate.py MAX_TITLE).
    ApiCase(
        "google_calendar", "huge-field", "accept", _google(google_page(google_event(summary=HUGE)))
    ),
    ApiCase("google_calendar", "deeply-nested", "error", lambda: {EVENTS: _nested("items")}),
    ApiCase(
        "google_calendar",
        "out-of-range",
        "skip",
        _google(
            google_page(
                google_event(),
                google_event("old", "1900-01-01"),
                google_event("future", "2200-01-01"),
                google_event(
                    "year1",
                    start={"dateTime": "0001-01-01T00:00:00Z", "timeZone": "America/New_York"},
                ),
            )
        ),
    ),
    ApiCase("google_calendar", "gzip-bomb", "error", lambda: {EVENTS: gzip_bomb()}),
]

API_CASES = WHOOP_CASES + GARMIN_CASES + GOOGLE_CASES


if __name__ == "__main__":
    for case in API_CASES:
        for path, answer in case.answers().items():
            size = len(answer.body) if isinstance(answer.body, bytes) else "streamed"
            print(f"{case.expect:<7}{case.api}/{case.name}  {path} ({size} bytes)")
