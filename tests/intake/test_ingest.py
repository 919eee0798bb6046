import shutil

import pytest
from sqlmodel import select

from bridge.errors import InputError
from bridge.intake.ingest import import_file
from bridge.store.db import utcnow
from bridge.store.models import CalendarEvent, ImportedFile, Reading
from tests.conftest import SAMPLE


def test_importing_the_same_file_twice_changes_nothing(store, ctx):
    first = import_file(store, "apple-health", SAMPLE / "apple_health_export.zip", ctx)
    rows = store.count(Reading)
    assert first.new == first.records == rows > 4000
    again = import_file(store, "apple-health", SAMPLE / "apple_health_export.zip", ctx)
    assert again.skipped_same_file and store.count(Reading) == rows
    forced = import_file(store, "apple-health", SAMPLE / "apple_health_export.zip", ctx, force=True)
    assert forced.records == rows and forced.new == 0 and store.count(Reading) == rows
    assert "0 new" in forced.line()
    assert store.count(ImportedFile) == 1


def test_a_newer_overlapping_export_adds_only_new_records(store, ctx, tmp_path):
    from bridge.sample_data.generate import write

    # The same export written again byte-for-byte, but renamed: a hash match is skipped;
    # appending records makes a new hash, and only the appended ones are new.
    a, *_ = write(tmp_path / "a")
    import_file(store, "apple-health", a, ctx)
    before = store.count(Reading)
    import zipfile

    xml = zipfile.ZipFile(a).read("apple_health_export/export.xml").decode()
    extra = (
        '<Record type="HKQuantityTypeIdentifierStepCount" sourceName="New Phone" unit="count" '
        'startDate="2026-11-19 08:00:00 +0100" endDate="2026-11-19 08:05:00 +0100" value="120"/>\n'
    )
    newer = tmp_path / "newer.xml"
    newer.write_text(xml.replace("</HealthData>", extra + "</HealthData>"))
    summary = import_file(store, "apple-health", newer, ctx)
    assert summary.new == 1 and store.count(Reading) == before + 1


def test_a_failed_import_commits_nothing(store, ctx, tmp_path):
    import zipfile

    xml = zipfile.ZipFile(SAMPLE / "apple_health_export.zip").read("apple_health_export/export.xml")
    broken = tmp_path / "export.xml"
    broken.write_bytes(xml[: len(xml) * 2 // 3])  # records first, then the file just stops
    with pytest.raises(InputError, match=r"ends early|malformed"):
        import_file(store, "apple-health", broken, ctx)
    assert store.count(Reading) == 0 and store.count(ImportedFile) == 0


def test_unknown_kind_and_missing_file(store, ctx, tmp_path):
    with pytest.raises(InputError, match="unknown import kind"):
        import_file(store, "polar", tmp_path, ctx)
    with pytest.raises(InputError, match="no such file"):
        import_file(store, "ics", tmp_path / "nope.ics", ctx)


def test_ics_import_twice_keeps_counts(store, ctx, tmp_path):
    path = tmp_path / "c.ics"
    shutil.copy(SAMPLE / "calendar.ics", path)
    import_file(store, "ics", path, ctx)
    n = store.count(CalendarEvent)
    summary = import_file(store, "ics", path, ctx, force=True)
    assert summary.new == 0 and store.count(CalendarEvent) == n


@pytest.mark.sqlite_only  # the fast writer is SQLite's; PostgreSQL uses the upsert
def test_the_fast_sqlite_writer_stores_exactly_what_upsert_stores(store, ctx):
    from datetime import UTC, datetime, timedelta, timezone

    from bridge.intake.ingest import READING_KEY, READING_UPDATE, ReadingWriter
    from bridge.store import upsert
    from connectors.base import ReadingRecord

    tz = timezone(timedelta(hours=-7))
    records = [
        ReadingRecord(
            "steps",
            datetime(2026, 3, 29, 1, 59, 59, tzinfo=tz),
            datetime(2026, 3, 29, 2, 5, tzinfo=tz),
            42.0,
            "count",
            "",
            "Phone",
            "iPhone",
        ),
        ReadingRecord(
            "heart_rate",
            datetime(2026, 3, 29, 1, 0, 0, 250_000, tzinfo=UTC),
            datetime(2026, 3, 29, 1, 0, 0, 250_000, tzinfo=UTC),
            61.0,
            "count/min",
            "",
            "Watch",
            "",
        ),
        ReadingRecord(
            "sleep",
            datetime(2026, 3, 28, 23, 0, tzinfo=ctx.tz),
            datetime(2026, 3, 29, 0, 30, tzinfo=ctx.tz),
            90.0,
            "min",
            "deep",
            "Watch",
            "Apple Watch",
        ),
    ]
    now = datetime(2026, 11, 19, 7, 0, tzinfo=UTC)
    with store.transaction() as session:
        writer = ReadingWriter(session, "apple_health", now)
        assert writer.fast
        for rec in records:
            assert writer.add(rec, utcnow()) is None
        assert writer.flush() == 3
        # The same rows through SQLAlchemy's upsert: identical keys and values, so nothing.
        rows = [r.row("apple_health", now) for r in records]
        assert upsert(session, Reading, rows, keys=READING_KEY, update=READING_UPDATE) == 0
        for rec in records:
            assert writer.add(rec, utcnow()) is None
        assert writer.flush() == 0
        rows[0]["value"] = 43.0
        assert upsert(session, Reading, rows, keys=READING_KEY, update=READING_UPDATE) == 1
        for rec in records:
            assert writer.add(rec, utcnow()) is None
        assert writer.flush() == 1  # the changed value is put back, and counted
    with store.session() as session:
        stored = session.exec(select(Reading).order_by(Reading.metric)).all()
    assert {r.metric: r.start_utc for r in stored} == {
        "steps": datetime(2026, 3, 29, 8, 59, 59, tzinfo=UTC),
        "heart_rate": datetime(2026, 3, 29, 1, 0, 0, 250_000, tzinfo=UTC),
        "sleep": datetime(2026, 3, 28, 22, 0, tzinfo=UTC),
    }
    assert {r.metric: r.utc_offset_min for r in stored} == {
        "steps": -420,
        "heart_rate": 0,
        "sleep": 60,
    }


# Real exports hold samples that share a natural key (source, type, start, end) but
# differ in value or device: a sample re-synced after a watchOS update, a phone's step
# count written twice. Each key is one reading, the last in the file wins, and a forced
# re-import changes nothing. Two such keys made a real export's re-import report "4 new".
TWICE = """<?xml version="1.0" encoding="UTF-8"?>
<HealthData locale="en_US">
 <ExportDate value="2026-11-19 08:30:00 +0100"/>
 <Record type="HKQuantityTypeIdentifierHeartRate" sourceName="Watch" sourceVersion="10.1"
  unit="count/min" startDate="2026-11-19 07:00:00 +0100" endDate="2026-11-19 07:00:00 +0100"
  value="61"/>
 <Record type="HKQuantityTypeIdentifierStepCount" sourceName="iPhone" unit="count"
  startDate="2026-11-19 07:00:00 +0100" endDate="2026-11-19 07:10:00 +0100" value="120"/>
 <Record type="HKQuantityTypeIdentifierHeartRate" sourceName="Watch" sourceVersion="10.2"
  device="&lt;&lt;HKDevice: 0x1&gt;, name:Apple Watch, software:10.2&gt;"
  unit="count/min" startDate="2026-11-19 07:00:00 +0100" endDate="2026-11-19 07:00:00 +0100"
  value="63"/>
 <Record type="HKQuantityTypeIdentifierStepCount" sourceName="iPhone" unit="count"
  startDate="2026-11-19 07:00:00 +0100" endDate="2026-11-19 07:10:00 +0100" value="118"/>
</HealthData>
"""


def test_samples_sharing_a_natural_key_are_one_reading_and_reimport_changes_nothing(
    store, ctx, tmp_path
):
    path = tmp_path / "export.xml"
    path.write_text(TWICE)
    first = import_file(store, "apple-health", path, ctx)
    assert first.records == 4 and first.new == 2
    with store.session() as s:
        stored = {r.metric: (r.value, r.device) for r in s.exec(select(Reading))}
    assert stored == {"heart_rate": (63.0, "Apple Watch"), "steps": (118.0, "")}
    for _ in range(2):
        again = import_file(store, "apple-health", path, ctx, force=True)
        assert again.new == 0 and store.count(Reading) == 2, again.line()


@pytest.mark.sqlite_only
def test_the_fast_writer_keeps_statement_journals_in_memory_and_puts_the_setting_back(
    store, ctx, monkeypatch
):
    from sqlalchemy import text

    from bridge.intake import ingest

    seen = []
    flush = ingest.ReadingWriter.flush

    def spy(self):
        raw = self.conn.connection.dbapi_connection
        seen.append(raw.execute("PRAGMA temp_store").fetchone()[0])
        return flush(self)

    monkeypatch.setattr(ingest.ReadingWriter, "flush", spy)
    import_file(store, "apple-health", SAMPLE / "apple_health_export.zip", ctx)
    assert seen and set(seen) == {2}  # MEMORY while writing: a journal per triggered row
    with store.session() as s:
        assert s.execute(text("PRAGMA temp_store")).scalar() == 0  # the pool's default
