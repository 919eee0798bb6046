from collections import Counter
from datetime import date

import pytest
from sqlalchemy import update
from sqlmodel import col, select

from bridge.errors import InputError
from bridge.intake.ingest import import_file
from bridge.store.models import CalendarEvent
from connectors import ics
from connectors.base import EventRecord, ReplaceScope
from tests.conftest import SAMPLE


def _events(path, ctx):
    return [r for r in ics.read(path, ctx) if isinstance(r, EventRecord)]


def test_recurring_series_with_exdate_and_moved_instance(ctx):
    events = _events(SAMPLE / "calendar.ics", ctx)
    standups = [e for e in events if e.title == "Team standup"]
    dates = {e.start.date() for e in standups}
    assert date(2026, 11, 5) not in dates  # EXDATE
    assert date(2026, 11, 4) in dates and date(2026, 11, 6) in dates
    assert all(e.attendee_count == 6 for e in standups)
    sarah = {e.recurrence_id: e for e in events if e.title == "1:1 with Sarah"}
    moved = sarah["20261118T130000Z"]  # identified by its original start...
    assert moved.start.isoformat() == "2026-11-19T15:00:00+01:00"  # ...at its new time
    assert len([e for e in sarah.values() if e.start.date() == date(2026, 11, 18)]) == 0


def test_only_a_series_instance_has_a_recurrence_id(ctx):
    # recurring-ical-events stamps every instance it yields with a RECURRENCE-ID, a lone
    # event's too: read as-is, every event of a file looked like a series to the
    # classifier's "weekly block" reading.
    events = _events(SAMPLE / "calendar.ics", ctx)
    lone = [e for e in events if e.title in ("Team social event", "Expense report")]
    series = [e for e in events if e.title == "Team standup"]
    assert lone and all(e.recurrence_id == "" for e in lone)
    assert len(series) > 1 and all(e.recurrence_id for e in series)
    moved = [e for e in events if e.title == "1:1 with Sarah"]
    assert moved and all(e.recurrence_id for e in moved)


def test_all_day_and_transparent_events(ctx):
    events = _events(SAMPLE / "calendar.ics", ctx)
    holiday = next(e for e in events if "holiday" in e.title)
    assert holiday.all_day and holiday.transparency == "transparent"
    assert (holiday.end - holiday.start).days == 1


def test_dst_change_keeps_local_wall_time(ctx):
    events = _events(SAMPLE / "calendar.ics", ctx)
    standups = sorted(e.start for e in events if e.title == "Team standup")
    before = next(s for s in standups if s.date() == date(2026, 10, 23))
    after = next(s for s in standups if s.date() == date(2026, 10, 26))
    assert before.hour == after.hour == 9
    assert before.utcoffset() != after.utcoffset()


def test_the_reader_yields_its_replace_scope_last(ctx):
    records = list(ics.read(SAMPLE / "calendar.ics", ctx))
    assert isinstance(records[-1], ReplaceScope)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"<!DOCTYPE html><html><body>Sign in</body></html>", "HTML page"),
        (b"hello", "no BEGIN:VCALENDAR"),
    ],
)
def test_not_a_calendar(ctx, tmp_path, content, needle):
    path = tmp_path / "cal.ics"
    path.write_bytes(content)
    with pytest.raises(InputError, match=needle):
        list(ics.read(path, ctx))


def test_deleted_events_are_cancelled_on_reimport(store, ctx, tmp_path):
    text = (SAMPLE / "calendar.ics").read_bytes().decode()
    path = tmp_path / "cal.ics"
    path.write_bytes(text.encode())
    first = import_file(store, "ics", path, ctx)
    total = store.count(CalendarEvent)
    assert first.new == total > 100
    # Drop the whole expense-report event from the file.
    start = text.index("BEGIN:VEVENT\r\nSUMMARY:Expense report")
    end = text.index("END:VEVENT\r\n", start) + len("END:VEVENT\r\n")
    path.write_bytes((text[:start] + text[end:]).encode())
    second = import_file(store, "ics", path, ctx)
    assert second.cancelled == 1 and second.new == 0
    assert store.count(CalendarEvent) == total
    with store.session() as s:
        statuses = Counter(s.exec(select(CalendarEvent.status)).all())
    assert statuses["cancelled"] == 1


def test_a_lone_event_stored_under_its_old_key_stands_once_after_a_reread(store, ctx):
    # Stores written before lone events lost their library-made RECURRENCE-ID hold them
    # under (uid, start stamp): the re-read adds the event under (uid, "") and cancels the
    # old row, so it stands once and nothing counts it twice.
    import_file(store, "ics", SAMPLE / "calendar.ics", ctx)
    with store.transaction() as s:
        row = s.exec(select(CalendarEvent).where(CalendarEvent.uid == "expenses@demo")).one()
        s.execute(
            update(CalendarEvent)
            .where(col(CalendarEvent.uid) == "expenses@demo")
            .values(
                recurrence_id=row.start_utc.strftime("%Y%m%dT%H%M%SZ"),
                content_hash="written by an older version",
            )
        )
    again = import_file(store, "ics", SAMPLE / "calendar.ics", ctx, force=True)
    assert (again.new, again.cancelled) == (1, 1)
    with store.session() as s:
        rows = s.exec(select(CalendarEvent).where(CalendarEvent.uid == "expenses@demo")).all()
    assert sorted((r.recurrence_id == "", r.status) for r in rows) == [
        (False, "cancelled"),
        (True, "confirmed"),
    ]


def test_location_is_read_and_reimport_adds_nothing(store, ctx, tmp_path):
    from connectors.base import HASHED_FIELDS, event_hash

    body = (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\n"
        "BEGIN:VEVENT\r\nUID:a\r\nDTSTART:20261102T170000Z\r\nDTEND:20261102T180000Z\r\n"
        "SUMMARY:Xq7 Blorp\r\nLOCATION:Aquapark\\, hala 2\r\n"
        "ORGANIZER:mailto:someone@example.org\r\nEND:VEVENT\r\n"
        "BEGIN:VEVENT\r\nUID:b\r\nDTSTART:20261103T170000Z\r\nDTEND:20261103T180000Z\r\n"
        "SUMMARY:Stand-up\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    path = tmp_path / "cal.ics"
    path.write_text(body)
    first = import_file(store, "ics", path, ctx)
    assert first.new == 2
    path.write_text(body + "\r\n")  # a new file (other bytes), the same events
    second = import_file(store, "ics", path, ctx)
    assert second.new == 0 and store.count(CalendarEvent) == 2
    with store.session() as s:
        rows = {e.uid: e for e in s.exec(select(CalendarEvent)).all()}
    # A plain file does not say which ORGANIZER is the person.
    assert (rows["a"].location, rows["a"].organized_by_me) == ("Aquapark, hala 2", False)
    # An event without location or organizer keeps the hash it had before they existed.
    b = rows["b"]
    old = event_hash({k: getattr(b, k) for k in HASHED_FIELDS})
    assert b.content_hash == old
    assert rows["a"].content_hash != event_hash({k: getattr(rows["a"], k) for k in HASHED_FIELDS})
