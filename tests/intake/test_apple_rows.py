"""The Apple importer's fast paths against its plain one: same rows, same skips, same errors.

`bridge/intake/apple_rows.py` turns ordinary quantity samples straight into rows, and big
exports are parsed in a child process (`bridge/intake/parse_apart.py`). Both must store
exactly what the plain path (records, `ReadingWriter.add`) stores, on awkward input too,
and a failed or stopped import through the child must leave nothing behind, nor the child.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar
from xml.sax.saxutils import quoteattr

import pytest
from sqlmodel import select

from benchmarks.gen_apple_export import generate
from bridge.errors import BridgeError, Cancelled, InputError
from bridge.intake import parse_apart
from bridge.intake.apple_rows import AppleRows
from bridge.intake.ingest import ImportSummary, ReadingWriter, import_file, write_records
from bridge.store.db import utcnow
from bridge.store.models import ImportedFile, Reading
from connectors import apple_health
from tests.helpers import ctrl_c_reaches_it

pytestmark = pytest.mark.sqlite_only  # the fast paths are the SQLite writer's

Q = "HKQuantityTypeIdentifier"
WATCH = "&lt;&lt;HKDevice: 0x1&gt;, name:Apple Watch, manufacturer:Apple Inc.&gt;"

# startDate, endDate: the formats and corners a real or damaged export may hold.
DATES = [
    ("2024-03-05 07:25:41 +0100", "2024-03-05 07:25:41 +0100"),  # an instant
    ("2024-03-05 07:25:41 +0545", "2024-03-05 07:26:41 +0545"),  # Nepal
    ("2024-03-05 07:25:41 -0930", "2024-03-05 07:25:41 -0930"),  # Marquesas
    ("2024-03-05 23:59:59 +1400", "2024-03-06 00:00:59 +1400"),  # Kiribati, across a day
    ("2024-03-05 00:10:00 -1200", "2024-03-05 00:20:00 -1200"),
    ("2024-03-31 01:59:59 +0100", "2024-03-31 03:00:01 +0200"),  # DST starts (Berlin)
    ("2024-10-27 02:30:00 +0200", "2024-10-27 02:30:00 +0100"),  # DST ends: 02:30 twice
    ("2024-03-05 07:25 +0100", "2024-03-05 07:25 +0100"),  # no seconds
    ("2024-03-05 07:25:41+0100", "2024-03-05 07:25:41+0100"),  # no space
    ("2024-03-05T07:25:41 +0100", "2024-03-05T07:25:41 +0100"),
    ("2024-03-05 07:25:41 +01:00", "2024-03-05 07:25:41 +01:00"),
    ("2024-03-05 07:25:41.500 +0100", "2024-03-05 07:25:41.500 +0100"),
    ("2024-03-05 07:25:41 Z", "2024-03-05 07:25:41 Z"),
    ("2024-03-05 07:25:41", "2024-03-05 07:25:41"),  # no offset at all
    ("1969-12-31 23:59:59 -0100", "1969-12-31 23:59:59 -0100"),  # before 1970
    ("1999-12-31 23:30:00 -0100", "1999-12-31 23:30:00 -0100"),  # 2000 in UTC
    ("1999-12-31 23:30:00 +0100", "1999-12-31 23:30:00 +0100"),  # before EARLIEST
    ("0001-01-01 00:30:00 +0100", "0001-01-01 00:30:00 +0100"),  # no UTC instant
    ("9999-12-31 23:30:00 -0500", "9999-12-31 23:30:00 -0500"),
    ("2099-01-01 00:00:00 +0000", "2099-01-01 00:00:00 +0000"),  # the future
    ("2024-02-29 12:00:00 +0000", "2024-02-29 12:00:00 +0000"),  # a leap day
    ("2023-02-29 12:00:00 +0000", "2023-02-29 12:00:00 +0000"),  # no such day
    ("2024-03-05 24:00:00 +0000", "2024-03-05 24:00:00 +0000"),
    ("2024-03-05 07:60:00 +0000", "2024-03-05 07:60:00 +0000"),
    ("2024-03-05 07:25:60 +0000", "2024-03-05 07:25:60 +0000"),
    ("2024-03-05 07:25:41 +2400", "2024-03-05 07:25:41 +2400"),
    ("2024-03-05 07:25:41 +0160", "2024-03-05 07:25:41 +0160"),
    ("2024-03-05 07:25:41 -0000", "2024-03-05 07:25:41 -0000"),
    ("2024-03-05 08:00:00 +0100", "2024-03-05 07:00:00 +0100"),  # ends before it starts
    ("2024-03-01 08:00:00 +0100", "2024-03-05 08:00:00 +0100"),  # four days long
    ("2024-03-05 07:25:41 +0100", "2024-03-06 07:25:41 +0100"),  # a day long
    ("２０２４-03-05 07:25:41 +0100", "２０２４-03-05 07:25:41 +0100"),  # wide digits
    ("2024-03-05 07:2５:41 +0100", "2024-03-05 07:2５:41 +0100"),
    ("2024-03-05 07:25:41 +0100 ", "2024-03-05 07:25:41 +0100 "),
    ("2024-03-05 07:25:41X+0100", "2024-03-05 07:25:41X+0100"),
    ("2024/03/05 07:25:41 +0100", "2024/03/05 07:25:41 +0100"),
    ("garbage", "garbage"),
    ("", ""),
]
# type, value, unit
VALUES = [
    ("HeartRate", "61", "count/min"),
    ("HeartRate", "19", "count/min"),  # below the range
    ("HeartRate", "nan", "count/min"),
    ("HeartRate", "inf", "count/min"),
    ("HeartRate", "6,1e1", "count/min"),  # a decimal comma
    ("HeartRate", "", "count/min"),
    ("StepCount", "1e3", "count"),
    ("StepCount", "-0", "count"),
    ("StepCount", "100001", "count"),
    ("ActiveEnergyBurned", "41840", "kJ"),  # 10,000 kcal: the top of the range
    ("ActiveEnergyBurned", "41841", "kJ"),
    ("ActiveEnergyBurned", "0.25", "Cal"),
    ("RespiratoryRate", " 14 ", "count/min"),
    ("RestingHeartRate", "1_000", "count/min"),
    ("RestingHeartRate", "52", "count/min\x07"),
    ("HeartRate", "61", "u" * 40),
    ("HeartRateVariabilitySDNN", "40", "ms"),
    ("BodyMass", "70", "kg"),
]
ORIGINS = [
    ("Robin’s Apple Watch", WATCH),
    ("", ""),
    ("Watch\u200bname", WATCH),  # a zero-width space: not printable
    ("x" * 201, ""),
    ("Health", "&lt;&lt;HKDevice: 0x2&gt;, name:" + "d" * 301 + "&gt;"),
    ("Health", "no name here"),
]


def _awkward_records() -> list[dict[str, str]]:
    out = []
    for i, (first, last) in enumerate(DATES):
        for j, (kind, value, unit) in enumerate(VALUES):
            origin, device = ORIGINS[(i + j) % len(ORIGINS)]
            a = {"type": Q + kind, "startDate": first, "endDate": last, "value": value}
            if unit:
                a["unit"] = unit
            if origin:
                a["sourceName"] = origin
            if device:
                a["device"] = device
            out.append(a)
    out.append({"type": Q + "HeartRate", "startDate": DATES[0][0], "value": "60"})
    out.append({"type": Q + "HeartRate", "endDate": DATES[0][0], "value": "60"})
    out.append({"type": Q + "HeartRate", "startDate": DATES[0][0], "endDate": DATES[0][0]})
    return out


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">")


def test_fast_rows_equal_the_plain_writers_rows(store):
    """Every row the fast hook makes is exactly what the plain path stores; the rest
    (None) goes the plain path. It must also take the ordinary cases, or it is no help."""
    now = utcnow()
    wall = now
    taken = 0
    with store.transaction() as session:
        writer = ReadingWriter(session, apple_health.SOURCE, now)
        try:
            hook = AppleRows(apple_health.SOURCE, writer.stamp, wall)
            for a in _awkward_records():
                a = {k: _unescape(v) for k, v in a.items()}
                row = hook(a)
                if row is None:
                    continue
                taken += 1
                rec = apple_health._record(a)  # must not raise where the hook took it
                assert rec is not None, a
                writer.rows.clear()
                assert writer.add(rec, wall) is None, a
                assert writer.rows == [row], a
        finally:
            writer.rows.clear()
            writer.close()
    # Plain samples in a whole-hour zone with a plain value, unit and origin: it takes them.
    assert taken >= 20


def _export(path: Path, records: list[dict[str, str]]) -> Path:
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<HealthData locale="en_US">']
    lines.append(' <ExportDate value="2024-03-06 08:00:00 +0100"/>')
    for a in records:
        attrs = " ".join(f"{k}={quoteattr(_unescape(v))}" for k, v in a.items())
        lines.append(f" <Record {attrs}/>")
    lines.append("</HealthData>")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


COLUMNS = ("metric", "origin", "start_utc", "end_utc", "utc_offset_min", "value", "unit")
COLUMNS += ("label", "device", "revision", "imported_at")


def _write(store, path: Path, ctx, how: str) -> tuple[ImportSummary, list[tuple[Any, ...]]]:
    """Import `path` into a fresh store by the plain path, the hook, or the child."""
    summary = ImportSummary(kind="apple-health", path=str(path))
    now = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)

    def fast(stamp: str, wall: datetime):
        if how == "hook":
            hook = AppleRows(apple_health.SOURCE, stamp, wall)
            return apple_health.read(path, dataclasses.replace(ctx, fast_rows=hook))
        return parse_apart._from_child(path, apple_health.SOURCE, stamp, wall)

    with store.transaction() as session:
        write_records(
            session,
            apple_health.SOURCE,
            apple_health.read(path, ctx),
            summary,
            now=now,
            fast_records=None if how == "plain" else fast,
        )
    with store.session() as s:
        rows = [
            tuple(getattr(r, c) for c in COLUMNS)
            for r in s.exec(select(Reading).order_by(Reading.id)).all()
        ]
    return summary, rows


def _both_ways(tmp_path, path, ctx, how):
    """The same file written the plain way and `how`, each into a fresh store."""
    from bridge.store import Store

    stores = {name: Store(f"sqlite:///{tmp_path / name}.db") for name in ("plain", how)}
    try:
        return _write(stores["plain"], path, ctx, "plain"), _write(stores[how], path, ctx, how)
    finally:
        for s in stores.values():
            s.dispose()


@pytest.mark.parametrize("how", ["hook", "child"])
def test_awkward_export_imports_the_same_by_every_path(tmp_path, ctx, settings, how):
    path = _export(tmp_path / "export.xml", _awkward_records())
    (plain_summary, plain_rows), (summary, rows) = _both_ways(tmp_path, path, ctx, how)
    assert plain_rows, "the awkward export stores some rows"
    assert sum(plain_summary.skipped.values()) > 100, "and skips many"
    assert rows == plain_rows
    assert summary.by_type == plain_summary.by_type
    assert summary.skipped == plain_summary.skipped
    assert (summary.records, summary.new) == (plain_summary.records, plain_summary.new)


@pytest.mark.parametrize("how", ["hook", "child"])
def test_generated_export_imports_the_same_by_every_path(tmp_path, ctx, how):
    path = tmp_path / "export.zip"
    generate(path, days=3, locale="de_DE", broken_dtd=True, control_chars=True)
    (plain_summary, plain_rows), (summary, rows) = _both_ways(tmp_path, path, ctx, how)
    assert len(plain_rows) > 3000
    assert rows == plain_rows
    assert summary.by_type == plain_summary.by_type


BAD = {
    "malformed.xml": b'<?xml version="1.0"?>\n<HealthData>\n<Record type="x"\n',
    "not-health.xml": b"<?xml version='1.0'?><Other/>",
    "ends-early.xml": b'<?xml version="1.0"?>\n<HealthData>\n<Record type="HKQuantityType'
    b'IdentifierHeartRate" startDate="2024-01-01 00:00:00 +0000" endDate="2024-01-01 00:00:00'
    b' +0000" value="60"/>\n',
    "garbage.bin": bytes(range(256)) * 4,
    "truncated.zip": b"PK\x03\x04" + b"\x00" * 40,
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_file_gives_the_same_one_line_error_from_the_child(
    tmp_path, ctx, store, monkeypatch, name
):
    path = tmp_path / name
    path.write_bytes(BAD[name])
    errors = []
    for forced in ("0", "1"):
        monkeypatch.setenv("RB_APPLE_PARSE_APART", forced)
        with pytest.raises(InputError) as err:
            import_file(store, "apple-health", path, ctx)
        errors.append(str(err.value))
    assert errors[0] == errors[1]
    assert "\n" not in errors[1] and str(path) in errors[1]
    with store.session() as s:
        assert s.exec(select(Reading)).first() is None
        assert s.exec(select(ImportedFile)).first() is None


class _Recorded(subprocess.Popen):
    children: ClassVar[list[subprocess.Popen]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _Recorded.children.append(self)


@pytest.fixture
def recorded(monkeypatch):
    _Recorded.children = []
    monkeypatch.setattr(parse_apart.subprocess, "Popen", _Recorded)
    monkeypatch.setenv("RB_APPLE_PARSE_APART", "1")
    return _Recorded.children


@pytest.fixture(scope="module")
def big_export(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("apple") / "export.zip"
    generate(path, days=20)  # about 13 MB of XML, 25,000 readings
    return path


def _nothing_stored(store) -> None:
    with store.session() as s:
        assert s.exec(select(Reading)).first() is None
        assert s.exec(select(ImportedFile)).first() is None


def test_child_killed_mid_import_stores_nothing(store, ctx, big_export, recorded):
    def kill(done: int) -> None:
        if recorded[0].poll() is None:
            os.kill(recorded[0].pid, signal.SIGKILL)

    with pytest.raises(BridgeError) as err:
        import_file(store, "apple-health", big_export, ctx, progress=kill)
    message = str(err.value)
    assert "\n" not in message
    assert "parser was ended by SIGKILL" in message and "nothing was stored" in message
    _nothing_stored(store)


def test_stopped_import_ends_the_child(store, ctx, big_export, recorded):
    event = threading.Event()
    ctx = dataclasses.replace(ctx, stop=event)

    def stop(done: int) -> None:
        event.set()

    with pytest.raises(Cancelled):
        import_file(store, "apple-health", big_export, ctx, progress=stop)
    assert len(recorded) == 1 and recorded[0].poll() is not None  # not left behind
    _nothing_stored(store)


def test_child_path_stores_what_one_process_stores(store, ctx, big_export, recorded):
    summary = import_file(store, "apple-health", big_export, ctx)
    assert len(recorded) == 1 and recorded[0].returncode == 0
    truth = json.loads(big_export.with_suffix(".truth.json").read_text())
    assert summary.new == summary.records == truth["records_total"] > 20_000
    assert dict(summary.by_type) == truth["records_by_metric"]
    again = import_file(store, "apple-health", big_export, ctx, force=True)
    assert again.new == 0 and again.records == summary.records


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found += [int(p) for p in task.read_text().split()]
    return found


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # ended; only not yet reaped by its new parent


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signalled_cli_import_leaves_no_child_and_no_rows(tmp_path, big_export, sig):
    config = tmp_path / "config.toml"
    data = tmp_path / "store"
    config.write_text(f'timezone = "Europe/Berlin"\ndata_dir = "{data}"\n')
    env = {**os.environ, "RHYTHM_BRIDGE_CONFIG": str(config), "RB_APPLE_PARSE_APART": "1"}
    cli = [str(Path(sys.executable).parent / "rhythm-bridge"), "import", "apple-health"]
    cli.append(str(big_export))
    parent = subprocess.Popen(
        cli,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=ctrl_c_reaches_it,
    )
    try:
        deadline = time.monotonic() + 60
        children: list[int] = []
        while not children and parent.poll() is None and time.monotonic() < deadline:
            children = _children(parent.pid)
            time.sleep(0.005)
        assert children, "the import never started its parser child"
        time.sleep(0.2)  # a few batches in
        parent.send_signal(sig)
        parent.communicate(timeout=30)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
    assert parent.returncode != 0
    deadline = time.monotonic() + 10
    while not all(_gone(c) for c in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(c) for c in children), "the parser child outlived the import"
    db = data / "rhythm-bridge.db"
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT count(*) FROM readings").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM imported_files").fetchone() == (0,)
    finally:
        conn.close()


def test_small_files_stay_in_one_process(tmp_path, store, ctx, monkeypatch):
    monkeypatch.delenv("RB_APPLE_PARSE_APART", raising=False)
    started: list[object] = []
    monkeypatch.setattr(parse_apart, "_from_child", lambda *a: started.append(a) or iter(()))
    path = tmp_path / "small.zip"
    generate(path, days=2)
    assert parse_apart.xml_bytes(path) < parse_apart.APART_MIN_BYTES
    summary = import_file(store, "apple-health", path, ctx)
    assert summary.new > 0 and not started
    monkeypatch.setattr(parse_apart, "APART_MIN_BYTES", 1000)
    import_file(store, "apple-health", path, ctx, force=True)
    assert len(started) == 1


def test_hour_cache_is_bounded():
    hook = AppleRows("apple_health", "stamp", datetime.now(UTC) + timedelta(days=1))
    base = datetime(2001, 1, 1, tzinfo=UTC)
    for h in range(0, 250_000, 1):
        when = (base + timedelta(hours=h)).strftime("%Y-%m-%d %H:%M:%S +0000")
        hook({"type": Q + "HeartRate", "startDate": when, "endDate": when, "value": "60"})
    assert 0 < len(hook.hours) <= 200_000


def test_child_ended_by_the_daemons_stop_is_a_stop(store, ctx, big_export, recorded):
    """systemd's SIGTERM reaches the parser child as well as the daemon, whose handler
    sets the stop flag: that is a stop (Cancelled), not a failed import."""
    event = threading.Event()
    ctx = dataclasses.replace(ctx, stop=event)

    def sigterm(done: int) -> None:
        if recorded[0].poll() is None:
            os.kill(recorded[0].pid, signal.SIGTERM)
            threading.Timer(0.3, event.set).start()

    with pytest.raises(Cancelled):
        import_file(store, "apple-health", big_export, ctx, progress=sigterm)
    _nothing_stored(store)
