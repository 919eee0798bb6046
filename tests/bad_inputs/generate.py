"""The bad-input corpus: every importer against files real life and attackers produce.

    python -m tests.bad_inputs.generate OUT_DIR    # write the corpus, one file per case

Generated, never committed: each case is a small function that writes its file, so the
corpus is reviewable as code and costs nothing in the repository. `expect` says what the
importer must do: "error" (one clear line naming the file, nothing written), "skip"
(import succeeds, the bad records are skipped with a warning, the good ones kept) or
"accept" (odd but valid: everything is imported, in bounded memory).
"""

from __future__ import annotations

import io
import json
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.shared import shared_path

HEALTH_OPEN = '<?xml version="1.0" encoding="UTF-8"?>\n<HealthData locale="en_US">\n'
STEP = (
    '<Record type="HKQuantityTypeIdentifierStepCount" sourceName="Watch" unit="count" '
    'startDate="{d} 08:00:00 +0100" endDate="{d} 08:10:00 +0100" value="{v}"/>\n'
)
GOOD = STEP.format(d="2026-11-01", v=120)
ICS_EVENT = (
    "BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20261101T000000Z\r\nDTSTART:{start}\r\n"
    "DTEND:{end}\r\nSUMMARY:{title}\r\nEND:VEVENT\r\n"
)


@dataclass(frozen=True)
class Case:
    kind: str  # import kind
    name: str  # file name, also the case id
    expect: str  # "error", "skip" or "accept"
    build: Callable[[Path], None]
    # what the one-line error must say (for "error"), and text that must never be stored
    needle: str = ""
    never_stored: str = ""


def _text(content: str, encoding: str = "utf-8") -> Callable[[Path], None]:
    return lambda p: p.write_bytes(content.encode(encoding))


def _bytes(content: bytes) -> Callable[[Path], None]:
    return lambda p: p.write_bytes(content)


def _zip(
    members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED
) -> Callable[[Path], None]:
    def build(path: Path) -> None:
        with zipfile.ZipFile(path, "w", compression) as zf:
            for name, data in members.items():
                zf.writestr(name, data)

    return build


def _zip_bomb(path: Path) -> None:
    # 1 GiB of spaces inside the XML compresses to about 1 MiB: reading it must stay in
    # bounded memory and be refused or finished quickly, never inflated into RAM.
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf,
        zf.open("apple_health_export/export.xml", "w", force_zip64=True) as member,
    ):
        member.write(HEALTH_OPEN.encode())
        block = b" " * (1 << 20)
        for _ in range(1024):
            member.write(block)
        member.write(b"</HealthData>\n")


def _truncated_zip(path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("apple_health_export/export.xml", HEALTH_OPEN + GOOD * 5000 + "</HealthData>\n")
    data = buf.getvalue()
    path.write_bytes(data[: len(data) // 2])


def _deeply_nested(path: Path) -> None:
    depth = 200_000
    path.write_text(
        HEALTH_OPEN + "<Correlation>" * depth + "</Correlation>" * depth + GOOD + "</HealthData>\n"
    )


BILLION_LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE HealthData [\n<!ENTITY a "aaaaaaaaaa">\n'
    + "".join(
        f'<!ENTITY {c} "{("&" + p + ";") * 10}">\n'
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + ']>\n<HealthData locale="en">'
    + STEP.format(d="2026-11-01", v=1).replace('sourceName="Watch"', 'sourceName="&i;"')
    + "</HealthData>\n"
)
XXE = (
    '<?xml version="1.0"?>\n<!DOCTYPE HealthData [\n'
    '<!ENTITY xxe SYSTEM "file:///etc/passwd">\n]>\n<HealthData locale="en">'
    + STEP.format(d="2026-11-01", v=1).replace('sourceName="Watch"', 'sourceName="&xxe;"')
    + "</HealthData>\n"
)


UDS = "DI_CONNECT/DI-Connect-Aggregator/UDSFile_2026-11-01_2026-11-10.json"


def _real_fit() -> bytes:
    """A real run recorded by a Fenix 5 (../shared/fixtures/garmin/fit), to be cut and forged."""
    return shared_path("garmin", "fit", "garmin-fenix-5-run.fit").read_bytes()


def _uds_day(day: str, rhr: float, steps: float) -> bytes:
    return json.dumps(
        [{"calendarDate": day, "restingHeartRate": rhr, "totalSteps": steps}]
    ).encode()


CASES: list[Case] = [
    # --- Apple Health -------------------------------------------------------------------
    Case("apple-health", "empty.xml", "error", _bytes(b"")),
    Case("apple-health", "truncated.xml", "error", _text(HEALTH_OPEN + GOOD * 10 + GOOD[:40])),
    Case("apple-health", "truncated.zip", "error", _truncated_zip),
    Case("apple-health", "not-a-zip.zip", "error", _bytes(b"PK\x03\x04 but then garbage" * 10)),
    Case(
        "apple-health",
        "png-named-xml.xml",
        "error",
        _bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40),
    ),
    Case(
        "apple-health",
        "random-bytes.xml",
        "error",
        _bytes(bytes((i * 7919 + 13) % 256 for i in range(50_000))),
    ),
    Case(
        "apple-health",
        "utf16.xml",
        "error",
        _text(
            '\ufeff<?xml version="1.0" encoding="UTF-8"?>\n<HealthData locale="en">'
            + GOOD
            + "</HealthData>\n",
            "utf-16-le",
        ),
    ),
    Case(
        "apple-health",
        "latin1-declared-utf8.xml",
        "error",
        _text(
            HEALTH_OPEN
            + GOOD
            + STEP.format(d="2026-11-02", v=5).replace("Watch", "Sören")
            + "</HealthData>\n",
            "latin-1",
        ),
    ),
    Case(
        "apple-health",
        "html.xml",
        "error",
        _text("<!DOCTYPE html><html><body>Sign in</body></html>"),
    ),
    Case("apple-health", "zip-without-export.zip", "error", _zip({"readme.txt": b"hello"})),
    Case(
        "apple-health",
        "zip-slip.zip",
        "error",
        _zip({"../../etc/evil/export.xml": (HEALTH_OPEN + GOOD + "</HealthData>\n").encode()}),
    ),
    Case("apple-health", "zip-bomb.zip", "error", _zip_bomb),
    Case("apple-health", "billion-laughs.xml", "error", _text(BILLION_LAUGHS)),
    Case("apple-health", "xxe.xml", "error", _text(XXE)),
    Case("apple-health", "deeply-nested.xml", "accept", _deeply_nested),
    Case(
        "apple-health",
        "huge-attribute.xml",
        "accept",
        _text(
            HEALTH_OPEN
            + GOOD.replace('sourceName="Watch"', 'sourceName="' + "W" * 20_000_000 + '"')
            + STEP.format(d="2026-11-02", v=7)
            + "</HealthData>\n"
        ),
    ),
    Case(
        "apple-health",
        "wrong-value-type.xml",
        "skip",
        _text(HEALTH_OPEN + STEP.format(d="2026-11-01", v="lots") + GOOD + "</HealthData>\n"),
    ),
    Case(
        "apple-health",
        "out-of-range.xml",
        "skip",
        _text(
            HEALTH_OPEN
            + GOOD
            + STEP.format(d="2026-11-01", v="1e12")
            + STEP.format(d="1900-01-01", v=10)
            + STEP.format(d="2200-01-01", v=10)
            + STEP.format(d="2026-11-01", v=10)
            .replace("StepCount", "HeartRateVariabilitySDNN")
            .replace('value="10"', 'value="-5"')
            + "</HealthData>\n"
        ),
    ),
    # --- iCalendar ----------------------------------------------------------------------
    Case("ics", "empty.ics", "error", _bytes(b"")),
    Case("ics", "html.ics", "error", _text("<!DOCTYPE html><html><body>Login</body></html>")),
    Case(
        "ics", "random-bytes.ics", "error", _bytes(bytes((i * 31 + 7) % 256 for i in range(20_000)))
    ),
    Case(
        "ics",
        "truncated.ics",
        "error",
        _text(
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\n"
            + ICS_EVENT.format(
                uid="a", start="20261101T080000Z", end="20261101T090000Z", title="Gym"
            )[:60]
        ),
    ),
    # An event that ends before it starts is repaired (end clamped to start), not refused.
    Case(
        "ics",
        "backwards-event.ics",
        "accept",
        _text(
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\n"
            + ICS_EVENT.format(
                uid="ok", start="20261118T080000Z", end="20261118T090000Z", title="Gym"
            )
            + ICS_EVENT.format(
                uid="back", start="20261118T100000Z", end="20261118T090000Z", title="Backwards"
            )
            + "END:VCALENDAR\r\n"
        ),
    ),
    # --- Garmin "Export your data" ZIP ----------------------------------------------------
    Case("garmin-export", "empty.zip", "error", _bytes(b"")),
    Case("garmin-export", "no-known-files.zip", "error", _zip({"DI_CONNECT/readme.txt": b"hi"})),
    Case(
        "garmin-export",
        "truncated-json.zip",
        "error",
        _zip({UDS: b'[{"calendarDate": "2026-11-01", "totalSteps": 80'}),
    ),
    Case(
        "garmin-export",
        "bom.zip",
        "accept",
        _zip({UDS: "\ufeff".encode() + _uds_day("2026-11-01", 55, 8000)}),
    ),
    Case(
        "garmin-export",
        "out-of-range.zip",
        "skip",
        _zip(
            {
                UDS: b"["
                + b",".join(
                    [
                        _uds_day("2026-11-01", 55, 8000)[1:-1],
                        _uds_day("2026-11-02", -5, 1e12)[1:-1],
                        _uds_day("1900-01-01", 60, 100)[1:-1],
                        _uds_day("not-a-date", 60, 100)[1:-1],
                    ]
                )
                + b"]"
            }
        ),
    ),
    # --- FIT files ----------------------------------------------------------------------
    Case("fit", "empty.fit", "error", _bytes(b"")),
    Case(
        "fit", "random-bytes.fit", "error", _bytes(bytes((i * 13 + 5) % 256 for i in range(4096)))
    ),
    Case("fit", "truncated.fit", "error", lambda p: p.write_bytes(_real_fit()[:2500])),
]


# --- hostile files: made to hurt, not merely broken ----------------------------------------
#
# Each was found to get past an earlier version (entities behind a comment, dates that
# overflow, forged FIT sizes, rules made to hang an expander, terminal escapes).

ENTITY_USE = GOOD.replace('sourceName="Watch"', 'sourceName="&x;"')
HIDDEN = "EXPANDED-ENTITY-TEXT"


def _apple_dtd(prefix: str, decl: str = f'<!ENTITY x "{HIDDEN}">') -> Callable[[Path], None]:
    """An export whose DOCTYPE (declaring an entity) hides behind `prefix`."""
    return _text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        + prefix
        + f"<!DOCTYPE HealthData [\n{decl}\n]>\n"
        + '<HealthData locale="en_US">\n'
        + ENTITY_USE
        + GOOD
        + "</HealthData>\n"
    )


def _long_comment_dtd(path: Path) -> None:
    _apple_dtd("<!--" + "x" * (5 << 20) + "-->\n")(path)


APPLE_DTD = {
    "dtd-after-comment-naming-root.xml": _apple_dtd("<!-- <HealthData> -->\n"),
    "dtd-after-pi-naming-root.xml": _apple_dtd("<?note <HealthData?>\n"),
    "dtd-after-long-comment.xml": _long_comment_dtd,
    "second-dtd.xml": _text(
        '<?xml version="1.0"?>\n<!DOCTYPE HealthData [\n<!ATTLIST HealthData locale CDATA #REQUIRED>\n]>\n'
        f'<!DOCTYPE HealthData [<!ENTITY x "{HIDDEN}">]>\n<HealthData locale="en">'
        + ENTITY_USE
        + "</HealthData>\n"
    ),
    "unparsed-entity.xml": _apple_dtd(
        "<!-- <HealthData -->", '<!NOTATION gif SYSTEM "gif">\n<!ENTITY x SYSTEM "a.gif" NDATA gif>'
    ),
    "parameter-entity.xml": _apple_dtd(
        "<!-- <HealthData -->", '<!ENTITY % p SYSTEM "file:///etc/passwd">\n%p;'
    ),
    "external-entity-behind-comment.xml": _apple_dtd(
        "<!-- <HealthData -->", '<!ENTITY x SYSTEM "file:///etc/hostname">'
    ),
    "laughs-behind-comment.xml": _apple_dtd(
        "<!-- <HealthData -->",
        '<!ENTITY a "aaaaaaaaaa">\n'
        + "".join(
            f'<!ENTITY {c} "{("&" + p + ";") * 10}">\n'
            for p, c in zip("abcdefgh", "bcdefghx", strict=True)
        ),
    ),
}
# expat itself refuses a DOCTYPE inside the document
DTD_AFTER_ROOT = _text(
    HEALTH_OPEN + f'<!DOCTYPE HealthData [<!ENTITY x "{HIDDEN}">]>' + ENTITY_USE + "</HealthData>\n"
)


def _step(day: str, offset: str, value: int = 10) -> str:
    return STEP.format(d=day, v=value).replace("+0100", offset)


APPLE_DATES = {
    "year-1.xml": _step("0001-01-01", "+0100"),
    "year-9999.xml": _step("9999-12-31", "-0500").replace("08:10:00", "23:59:00"),
    "year-10000.xml": _step("10000-01-01", "+0000"),
    "month-13.xml": _step("2026-13-01", "+0100"),
    "offset-99.xml": _step("2026-11-01", "+9999"),
    "workout-year-1.xml": (
        '<Workout workoutActivityType="HKWorkoutActivityTypeRunning" sourceName="W" '
        'startDate="0001-01-01 00:10:00 +0100" endDate="0001-01-01 00:40:00 +0100"/>\n'
    ),
}

CONTROL_TITLE = "Gym\x1b]0;pwned\x07\x1b[2J\u009b31m\u202eevil"


def _fit_forged(field: int, size: int) -> Callable[[Path], None]:
    """The fixture with one field size of its first definition message forged, CRC fixed
    (so the decoder, not the CRC check, meets the lie)."""

    def build(path: Path) -> None:
        import struct

        from fitdecode.utils import compute_crc

        data = bytearray(_real_fit())
        at = data[0] + 6 + 3 * field + 1  # header, record header + 5, 3 bytes per field
        data[at] = size
        data[-2:] = struct.pack("<H", compute_crc(bytes(data[:-2])))
        path.write_bytes(bytes(data))

    return build


def _fit_header(offset: int, value: bytes) -> Callable[[Path], None]:
    def build(path: Path) -> None:
        data = bytearray(_real_fit())
        data[offset : offset + len(value)] = value
        path.write_bytes(bytes(data))

    return build


ICS_HEAD = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\n"
ICS_OK = ICS_EVENT.format(uid="ok", start="20261118T080000Z", end="20261118T090000Z", title="Gym")


def _ics(*events: str, tail: str = "END:VCALENDAR\r\n") -> Callable[[Path], None]:
    return _text(ICS_HEAD + ICS_OK + "".join(events) + tail)


def _rule(rule: str, start: str = "20261101T080000Z", uid: str = "bad") -> str:
    return (
        f"BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20261101T000000Z\r\nDTSTART:{start}\r\n"
        f"DURATION:PT30M\r\nRRULE:{rule}\r\nSUMMARY:x\r\nEND:VEVENT\r\n"
    )


def _many_series(path: Path) -> None:
    # 30 hourly series: 1,176 instances each in the window, 35 k in all, over the
    # per-file cap of 20 k (refused before any is expanded).
    _ics(*(_rule("FREQ=HOURLY", "20261015T000000Z", f"s{i}") for i in range(30)))(path)


def _many_singles(path: Path) -> None:
    # 50 k plain events far outside the window: dropped by the text scan, never parsed.
    _ics(
        *(
            ICS_EVENT.format(
                uid=f"old{i}", start="20100101T080000Z", end="20100101T090000Z", title="Old"
            )
            for i in range(50_000)
        )
    )(path)


HOSTILE: list[Case] = [
    *(Case("apple-health", n, "error", b, "XML entity", HIDDEN) for n, b in APPLE_DTD.items()),
    Case("apple-health", "dtd-after-root.xml", "error", DTD_AFTER_ROOT, "malformed XML", HIDDEN),
    *(
        Case("apple-health", n, "skip", _text(HEALTH_OPEN + GOOD + rec + "</HealthData>\n"))
        for n, rec in APPLE_DATES.items()
    ),
    Case(
        "apple-health",
        "control-characters.xml",
        "accept",
        _text(HEALTH_OPEN + GOOD.replace("Watch", "W\u009b2J\u202eatch") + "</HealthData>\n"),
        never_stored="\u009b",
    ),
    *(
        Case("fit", f"forged-field-{f}-size-{n}.fit", "error", _fit_forged(f, n), "FIT")
        for f, n in ((0, 0), (1, 200), (0, 3), (3, 0), (6, 2), (6, 0))
    ),
    Case("fit", "forged-header-size.fit", "error", _fit_header(0, b"\xff"), "FIT"),
    Case("fit", "forged-data-size.fit", "error", _fit_header(4, b"\xff\xff\xff\x7f"), "FIT"),
    Case("fit", "not-fit-signature.fit", "error", _fit_header(8, b"NOPE"), "FIT"),
    Case("ics", "secondly.ics", "error", _ics(_rule("FREQ=SECONDLY")), "every second"),
    Case("ics", "interval-0.ics", "error", _ics(_rule("FREQ=DAILY;INTERVAL=0")), "INTERVAL"),
    Case("ics", "count-0.ics", "error", _ics(_rule("FREQ=DAILY;COUNT=0")), "COUNT"),
    Case("ics", "freq-unknown.ics", "error", _ics(_rule("FREQ=FORTNIGHTLY")), "RRULE"),
    Case("ics", "minutely.ics", "skip", _ics(_rule("FREQ=MINUTELY")), ""),
    Case(
        "ics",
        "minutely-since-1970.ics",
        "skip",
        _ics(_rule("FREQ=MINUTELY;INTERVAL=3", "19700101T000000Z")),
    ),
    Case("ics", "daily-since-year-1.ics", "skip", _ics(_rule("FREQ=DAILY", "00010101T080000Z"))),
    Case(
        "ics",
        "hourly-count-huge.ics",
        "skip",
        _ics(_rule("FREQ=HOURLY;COUNT=999999999", "19900101T000000Z")),
    ),
    Case(
        "ics",
        "byhour-byminute-daily.ics",
        "skip",
        _ics(
            _rule(
                "FREQ=DAILY;BYHOUR="
                + ",".join(map(str, range(24)))
                + ";BYMINUTE="
                + ",".join(map(str, range(60)))
            )
        ),
    ),
    Case("ics", "bysetpos-never.ics", "skip", _ics(_rule("FREQ=DAILY;BYSETPOS=3"))),
    Case(
        "ics",
        "bysetpos-monthly-never.ics",
        "skip",
        _ics(_rule("FREQ=MONTHLY;BYDAY=MO;BYSETPOS=-6")),
    ),
    Case(
        "ics",
        "february-30th-daily.ics",
        "accept",
        _ics(_rule("FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30", "20261001T080000Z")),
    ),
    Case(
        "ics",
        "monday-april-31st-minutely.ics",
        "accept",
        _ics(_rule("FREQ=MINUTELY;BYDAY=MO;BYMONTHDAY=31;BYMONTH=4", "20261001T080000Z")),
    ),
    Case(
        "ics",
        "bymonthday-40.ics",
        "accept",
        _ics(_rule("FREQ=DAILY;BYMONTHDAY=40", "20261001T080000Z")),
    ),
    Case("ics", "until-year-9999.ics", "accept", _ics(_rule("FREQ=DAILY;UNTIL=99991231T000000Z"))),
    Case("ics", "too-many-instances.ics", "error", _many_series, "max_instances_per_file"),
    Case("ics", "fifty-thousand-old-events.ics", "accept", _many_singles),
    Case(
        "ics",
        "ends-in-year-9999.ics",
        "skip",
        _ics(
            ICS_EVENT.format(
                uid="far", start="20261118T100000Z", end="99991231T235900Z", title="Far"
            )
        ),
    ),
    Case(
        "ics",
        "duration-overflows.ics",
        "skip",
        _ics(
            "BEGIN:VEVENT\r\nUID:long\r\nDTSTART:20261118T100000Z\r\nDURATION:P99999999W\r\nSUMMARY:x\r\nEND:VEVENT\r\n"
        ),
    ),
    Case(
        "ics",
        "escape-in-malformed-line.ics",
        "error",
        _text(ICS_HEAD + "\x1b]0;pwned\x07\x1b[2J\r\n" + ICS_OK + "END:VCALENDAR\r\n"),
        "malformed",
    ),
    Case(
        "ics",
        "escape-in-title.ics",
        "accept",
        _ics(
            ICS_EVENT.format(
                uid="t", start="20261118T100000Z", end="20261118T110000Z", title=CONTROL_TITLE
            )
        ),
        never_stored="\x1b",
    ),
    Case(
        "ics",
        "unbalanced-vevent.ics",
        "error",
        _ics("BEGIN:VEVENT\r\nUID:x\r\nDTSTART:20261118T100000Z\r\n"),
        "has no END line",
    ),
    Case("ics", "no-end-vcalendar.ics", "error", _ics(tail=""), "ends early"),
    Case("ics", "stray-end.ics", "error", _ics("END:VEVENT\r\n"), "without BEGIN"),
    Case(
        "ics",
        "misspelt-end-vtodo.ics",
        "accept",
        _text(
            ICS_HEAD
            + ICS_OK
            + "BEGIN:VTODO\r\nUID:t1\r\nSUMMARY:Tax\r\nEND:VTOOD\r\nEND:VCALENDAR\r\n"
        ),
    ),
    *(
        Case(
            "garmin-export",
            n,
            "skip",
            _zip(
                {
                    UDS: b"["
                    + _uds_day("2026-11-01", 55, 8000)[1:-1]
                    + b","
                    + _uds_day(day, 60, 100)[1:-1]
                    + b"]"
                }
            ),
        )
        for n, day in (
            ("year-1.zip", "0001-01-01"),
            ("year-9999.zip", "9999-12-31"),
            ("month-13.zip", "2026-13-01"),
        )
    ),
]
CASES += HOSTILE

# Fitbit Takeout, WHOOP's export and the readings CSV (issue 38).
FITBIT = "Takeout/Fitbit/Global Export Data/"
RHR_GOOD = b'{"dateTime": "11/01/26 00:00:00", "value": {"date": "11/01/26", "value": 55.2}}'
WHOOP_CYCLES = (
    "Cycle start time,Cycle end time,Cycle timezone,Recovery score %,"
    "Resting heart rate (bpm),Heart rate variability (ms),Average HR (bpm),"
    "Sleep onset,Wake onset\n"
    "2026-11-01 23:00:00,2026-11-02 23:00:00,UTC+01:00,60,52,45,64,"
    "2026-11-01 23:00:00,2026-11-02 07:00:00\n"
)
READINGS_HEAD = "start,end,metric,value,unit,source\n"
READINGS_OK = "2026-11-02T07:00:00+01:00,,hrv_rmssd,44,ms,Oura\n"
CASES += [
    Case("fitbit", "empty.zip", "error", _bytes(b""), "not a zip file"),
    Case(
        "fitbit",
        "no-known-files.zip",
        "error",
        _zip({"Takeout/Fitbit/readme.txt": b"hi"}),
        "is this a Fitbit export",
    ),
    Case(
        "fitbit",
        "truncated-json.zip",
        "error",
        _zip({FITBIT + "sleep-2026-11-01.json": b'[{"logId": 1, "dateOfSleep"'}),
        "is not valid JSON",
    ),
    Case(
        "fitbit",
        "zip-slip.zip",
        "error",
        _zip({"../../sleep-2026-11-01.json": b"[]"}),
        "unsafe member name",
    ),
    Case(
        "fitbit",
        "bad-and-implausible-days.zip",
        "skip",
        _zip(
            {
                FITBIT + "resting_heart_rate-2026-01-01.json": b"["
                + RHR_GOOD
                + b', {"dateTime": "11/02/26 00:00:00", "value": {"value": 900}}'
                + b', {"dateTime": "never", "value": {"value": 50}}]'
            }
        ),
    ),
    Case("whoop-export", "empty.zip", "error", _bytes(b""), "not a zip file"),
    Case(
        "whoop-export",
        "no-known-files.zip",
        "error",
        _zip({"my_whoop_data/readme.txt": b"hi"}),
        "Export my data",
    ),
    Case(
        "whoop-export",
        "missing-column.zip",
        "error",
        _zip({"sleeps.csv": b"Sleep start,Sleep end\n1,2\n"}),
        "no 'sleep onset' column",
    ),
    Case(
        "whoop-export",
        "bad-zone-row.zip",
        "skip",
        _zip(
            {
                "physiological_cycles.csv": (
                    WHOOP_CYCLES + "2026-11-02 23:00:00,,Mars+1,,,,,,\n"
                ).encode()
            }
        ),
    ),
    Case(
        "whoop-export",
        "journal-stays-out.zip",
        "accept",
        _zip(
            {
                "physiological_cycles.csv": WHOOP_CYCLES.encode(),
                "journal_entries.csv": b"Cycle start time,Cycle end time,Cycle timezone,"
                b"Question text,Answered yes,Notes\n2026-11-01 23:00:00,,UTC+01:00,"
                b"PRIVATE question,true,PRIVATE note\n",
            }
        ),
        never_stored="PRIVATE",
    ),
    Case("readings", "empty.csv", "error", _text(""), "the first line names the columns"),
    Case(
        "readings",
        "html.csv",
        "error",
        _text("<!DOCTYPE html><html><body>Sign in</body></html>\n"),
        "no 'start' column",
    ),
    Case(
        "readings",
        "latin-1.csv",
        "error",
        _text(READINGS_HEAD + "2026-11-02,,steps,1,,Bräu\n", "latin-1"),
        "not UTF-8",
    ),
    Case(
        "readings",
        "bad-rows.csv",
        "skip",
        _text(
            READINGS_HEAD
            + READINGS_OK
            + "2026-11-02T07:00:00+01:00,,hrv_rmssd,-5,ms,Oura\n"
            + "2026-11-02T07:00:00+01:00,,weight,80,kg,Scale\n"
            + "yesterday,,steps,10,,Phone\n"
            + "2026-11-02T07:00:00+01:00,,steps,1e400,,Phone\n"
        ),
    ),
    Case(
        "readings",
        "control-characters.csv",
        "accept",
        _text(READINGS_HEAD + READINGS_OK.replace("Oura", "Oura\x1b[2J")),
        never_stored="\x1b",
    ),
]


def write_corpus(out: Path) -> list[tuple[Case, Path]]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for case in CASES:
        path = out / case.kind / case.name
        path.parent.mkdir(parents=True, exist_ok=True)
        case.build(path)
        written.append((case, path))
    return written


if __name__ == "__main__":
    for case, path in write_corpus(Path(sys.argv[1] if len(sys.argv) > 1 else "bad_inputs")):
        print(f"{case.expect:<6}{path} ({path.stat().st_size} bytes)")
