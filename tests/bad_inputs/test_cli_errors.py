"""Every kind of bad file: one clear line naming the file, exit code 2, nothing written."""

import io
import random
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bridge.cli.main import app
from bridge.errors import InputError
from bridge.intake.ingest import import_file
from bridge.store import Store
from bridge.store.models import CalendarEvent, ImportedFile, Reading
from tests.bad_inputs.guards import bounded
from tests.conftest import SAMPLE
from tests.helpers import write_config
from tests.shared import shared_path

XML = zipfile.ZipFile(SAMPLE / "apple_health_export.zip").read("apple_health_export/export.xml")
HEAD = b'<?xml version="1.0"?>\n'
STEP = (
    b'<Record type="HKQuantityTypeIdentifierStepCount" sourceName="Watch" unit="count" '
    b'startDate="2026-11-01 08:00:00 +0100" endDate="2026-11-01 08:10:00 +0100" value="5"/>'
)


def _zip(members: dict[str, bytes], method=zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _slip(data: bytes) -> bytes:
    # zipfile refuses to write "../" names itself, so rename the entry in the raw bytes.
    raw = _zip({"apple_health_export/export.xml": data, "aa/evil.sh": b"#!/bin/sh\n"})
    return raw.replace(b"aa/evil.sh", b"../evil.sh")


def _bomb() -> bytes:
    # 48 MB of zeros deflate to about 50 KB: a 1000x ratio no real export has.
    buf = io.BytesIO()
    with (
        zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf,
        zf.open("apple_health_export/export.xml", "w") as fh,
    ):
        for _ in range(48):
            fh.write(bytes(1 << 20))
    return buf.getvalue()


LAUGHS = (
    HEAD
    + b'<!DOCTYPE HealthData [\n<!ENTITY a "aaaaaaaaaaaaaaaaaaaa">\n'
    + b"".join(
        f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">\n'.encode() for i in range(9)
    )
    + b']>\n<HealthData locale="en">'
    + STEP.replace(b'sourceName="Watch"', b'sourceName="&j;"')
    + b"</HealthData>"
)
XXE = (
    HEAD
    + b'<!DOCTYPE HealthData [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n<HealthData locale="en">'
    + STEP.replace(b'sourceName="Watch"', b'sourceName="&xxe;"')
    + b"</HealthData>"
)
NOISE = random.Random(7).randbytes(3 << 20)

CASES = {
    "truncated zip": (
        "apple-health",
        "export.zip",
        (SAMPLE / "apple_health_export.zip").read_bytes()[:30_000],
        "not a zip file",
    ),
    "truncated xml": ("apple-health", "export.xml", XML[: len(XML) // 2], "ends early"),
    "zip without export.xml": (
        "apple-health",
        "export.zip",
        _zip({"apple_health_export/export_cda.xml": b"<x/>"}),
        "no export.xml inside",
    ),
    "not a zip named .zip": (
        "apple-health",
        "export.zip",
        b"PK but not really a zip" * 50,
        "not a zip file",
    ),
    "zip slip": ("apple-health", "export.zip", _slip(XML), "unsafe member name"),
    "zip bomb": ("apple-health", "export.zip", _bomb(), "zip bomb"),
    "billion laughs": ("apple-health", "export.xml", LAUGHS, "undefined entity"),
    "external entity": ("apple-health", "export.xml", XXE, "undefined entity"),
    "random bytes xml": ("apple-health", "export.xml", NOISE, "not an Apple Health export"),
    "random bytes zip": ("apple-health", "export.zip", NOISE, "not a zip file"),
    "garmin random bytes": ("garmin-export", "garmin.zip", NOISE, "not a zip file"),
    "garmin zip slip": (
        "garmin-export",
        "garmin.zip",
        _zip({"DI_CONNECT/DI-Connect-Wellness/1_sleepData.json": b"[]", "/etc/cron.d/x": b""}),
        "unsafe member name",
    ),
    "garmin json bomb": (
        "garmin-export",
        "garmin.zip",
        _zip({"DI_CONNECT/DI-Connect-Wellness/1_sleepData.json": b"[" + b" " * (40 << 20) + b"]"}),
        "zip bomb",
    ),
    "fit bad crc": (
        "fit",
        "bad.fit",
        (lambda b: b[:-1] + bytes([b[-1] ^ 0x5A]))(
            shared_path("garmin", "fit", "MonitoringFile.fit").read_bytes()
        ),
        "not a readable FIT file",
    ),
    "fit random bytes": ("fit", "x.fit", NOISE[:5000], "not a readable FIT file"),
    "ics that is html": (
        "ics",
        "cal.ics",
        b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head></html>",
        "HTML page",
    ),
    "ics random bytes": ("ics", "cal.ics", NOISE[:5000], "not an iCalendar file"),
}


pytestmark = pytest.mark.usefixtures("cli_state")


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_file_via_the_cli(tmp_path, case):
    kind, name, content, needle = CASES[case]
    path = tmp_path / name
    path.write_bytes(content)
    cfg = write_config(tmp_path / "c.toml", tmp_path / "data")
    result = CliRunner().invoke(app, ["--config", str(cfg), "import", kind, str(path)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(path) in lines[0], (
        result.output
    )
    assert needle in lines[0]
    store = Store(f"sqlite:///{tmp_path / 'data' / 'rhythm-bridge.db'}")
    try:
        assert store.count(Reading) == store.count(CalendarEvent) == store.count(ImportedFile) == 0
    finally:
        store.dispose()


@pytest.mark.parametrize(
    "case", ["zip bomb", "billion laughs", "random bytes xml", "garmin json bomb"]
)
def test_memory_stays_bounded(store, ctx, tmp_path, case):
    kind, name, content, _ = CASES[case]
    path = tmp_path / name
    path.write_bytes(content)
    with bounded(memory=16 << 20), pytest.raises(InputError):
        import_file(store, kind, path, ctx)


KILLED_IMPORT = """
import os, signal, sys
from datetime import datetime, UTC
from pathlib import Path
from zoneinfo import ZoneInfo
from bridge.intake.ingest import import_file
from bridge.store import Store
from connectors.base import ReadContext

def die(count):
    if count >= 2000:
        os.kill(os.getpid(), signal.SIGKILL)

ctx = ReadContext(tz=ZoneInfo("Europe/Berlin"), now=datetime.now(UTC))
import_file(Store(sys.argv[1]), "apple-health", Path(sys.argv[2]), ctx, progress=die)
"""


def test_a_killed_import_leaves_nothing_and_can_be_rerun(store, ctx, tmp_path):
    """kill -9 half-way through an import: the transaction never commits."""
    path = tmp_path / "export.zip"
    path.write_bytes((SAMPLE / "apple_health_export.zip").read_bytes())
    child = subprocess.run(
        [sys.executable, "-c", KILLED_IMPORT, store.url, str(path)],
        capture_output=True,
        cwd=Path(__file__).parents[2],
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert store.count(Reading) == 0 and store.count(ImportedFile) == 0
    again = import_file(store, "apple-health", path, ctx)
    assert again.new == again.records == store.count(Reading) > 2000
