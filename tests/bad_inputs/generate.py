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
FIT_FIXTURE = (
    Path(__file__).parent.parent / "fixtures" / "garmin" / "fit" / "garmin-fenix-5-run.fit"
)


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
    Case("fit", "truncated.fit", "error", lambda p: p.write_bytes(FIT_FIXTURE.read_bytes()[:2500])),
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
