"""Real files from public parsers' test suites (../shared/fixtures/real_files/SOURCES.md), imported
the way a person would: each is read or refused with one line naming it, never a
traceback; what the reference parsers read is not refused; every event lands exactly
once; a forced re-import changes nothing.

The references are the libraries the parsers' authors test against, not our readers:
icalendar + recurring-ical-events for .ics, the Garmin FIT SDK for .fit.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from bridge.errors import BridgeError
from bridge.intake.ingest import import_file
from bridge.store import Store
from bridge.store.models import CalendarEvent, Reading
from connectors.base import ReadContext
from connectors.validate import EARLIEST_EVENT
from tests.conftest import BERLIN, DEMO_NOW
from tests.shared import shared_path

REAL = shared_path("real_files")
FIXTURES = REAL.parent
ICS_FILES = sorted((REAL / "ics").rglob("*.ics"))
FIT_FILES = sorted(
    p
    for p in [*(REAL / "fit").rglob("*"), *(FIXTURES / "garmin" / "fit").glob("*")]
    if p.suffix.lower() == ".fit"
)
APPLE_FILES = sorted(
    [*(FIXTURES / "apple_health").glob("*.xml"), *(FIXTURES / "apple_health").rglob("export.xml")]
)
# Before the window: a week, for RDATEs earlier than the first DTSTART; after it: long
# enough for every series in these files, short enough to expand fast.
BEFORE, AFTER = timedelta(days=7), timedelta(days=400)


# Files the reference reads that are refused by design (bridge/intake hostile-input
# rules), each with why reading them would be worse than one line.
REFUSED_ON_PURPOSE = {
    # No END:VCALENDAR: a download cut short. Reading it would cancel every event that was
    # cut off (for an .ics, absence is deletion).
    "issue_350.ics": "truncated",
    "timezone_same_start_and_offset.ics": "truncated",
    # RRULE with COUNT=-1: an invalid rule, refused rather than guessed at.
    "issue_128_only_first_event.ics": "invalid RRULE",
}


def _name(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _first_start(path: Path) -> datetime:
    """Where the file's events begin (the person's "now" for this import)."""
    import icalendar

    try:
        cal = icalendar.Calendar.from_ical(path.read_bytes())
        found = []
        for comp in cal.walk("VEVENT"):
            value = comp.get("DTSTART")
            for item in value if isinstance(value, list) else [value]:
                when = getattr(item, "dt", None)
                if isinstance(when, date):
                    found.append(datetime(when.year, when.month, when.day, tzinfo=UTC))
        return min(found)
    except Exception:
        return DEMO_NOW.astimezone(UTC)


def window(path: Path) -> ReadContext:
    first = _first_start(path)
    return ReadContext(tz=BERLIN, now=first, past_days=BEFORE.days, future_days=AFTER.days)


def reference_instances(path: Path, ctx: ReadContext) -> int | None:
    """How many plausible instances icalendar + recurring-ical-events read in the window,
    skipping the series they cannot expand; None when icalendar finds no calendar."""
    import icalendar
    import recurring_ical_events

    try:
        cal = icalendar.Calendar.from_ical(path.read_bytes())
    except Exception:
        return None
    if getattr(cal, "name", "") != "VCALENDAR":
        return None
    start, end = ctx.now - BEFORE, ctx.now + AFTER
    try:
        found = recurring_ical_events.of(cal, skip_bad_series=True).between(start, end)
    except Exception:
        return None
    count = 0
    for comp in found:
        try:
            when = comp.decoded("DTSTART")
        except Exception:
            continue
        if not isinstance(when, datetime):
            when = datetime(when.year, when.month, when.day, tzinfo=BERLIN)
        elif when.tzinfo is None:
            when = when.replace(tzinfo=BERLIN)
        count += when >= EARLIEST_EVENT
    return count


def assert_one_line(err: BaseException, path: Path) -> None:
    text = str(err)
    assert "\n" not in text and "Traceback" not in text, text
    assert path.name in text, f"the message does not name the file: {text}"


def events_of(store: Store, path: Path) -> list[tuple[str, str, str]]:
    with store.session() as session:
        rows = session.execute(
            select(CalendarEvent.uid, CalendarEvent.recurrence_id, CalendarEvent.status).where(
                CalendarEvent.calendar_id == str(path.resolve())
            )
        ).all()
    return [tuple(r) for r in rows]


@pytest.mark.parametrize("path", ICS_FILES, ids=_name)
def test_ics_file_lands_once_or_is_refused_in_one_line(store: Store, path: Path) -> None:
    ctx = window(path)
    expected = reference_instances(path, ctx)
    try:
        first = import_file(store, "ics", path, ctx)
    except BridgeError as err:
        # Refusing loses nothing only where the reference reads no instance either, or
        # where reading would be worse (see REFUSED_ON_PURPOSE).
        if path.name not in REFUSED_ON_PURPOSE:
            assert not expected, f"refused, but recurring-ical-events reads {expected}: {err}"
        assert_one_line(err, path)
        return
    rows = events_of(store, path)
    assert len(rows) == len(set((uid, rid) for uid, rid, _ in rows))
    events = first.by_type.get("event", 0)  # to-dos in the same file are counted apart
    assert events == len(rows), first.line()
    if expected is not None:
        assert events >= expected, f"{expected} instances read by the reference"
    again = import_file(store, "ics", path, ctx, force=True)
    assert (again.new, again.cancelled, again.records) == (0, 0, first.records), again.line()
    assert events_of(store, path) == rows


def _sdk_reads(path: Path) -> bool:
    from garmin_fit_sdk import Decoder, Stream

    # from_byte_array: the SDK's from_file leaves the file open.
    decoder = Decoder(Stream.from_byte_array(bytearray(path.read_bytes())))
    if not (decoder.is_fit() and decoder.check_integrity()):
        return False
    _, errors = decoder.read()
    return not errors


def _reading_count(store: Store) -> int:
    with store.session() as session:
        return session.execute(select(func.count()).select_from(Reading)).scalar_one()


@pytest.mark.parametrize("path", FIT_FILES, ids=_name)
def test_fit_file_is_read_or_refused_in_one_line(store: Store, ctx: ReadContext, path: Path):
    try:
        first = import_file(store, "fit", path, ctx)
    except BridgeError as err:
        assert not _sdk_reads(path), f"refused, but the Garmin FIT SDK reads it: {err}"
        assert_one_line(err, path)
        return
    stored = _reading_count(store)
    assert first.new == stored, first.line()
    again = import_file(store, "fit", path, ctx, force=True)
    assert again.new == 0 and _reading_count(store) == stored, again.line()


@pytest.mark.parametrize("path", APPLE_FILES, ids=_name)
def test_apple_export_reimport_adds_nothing(store: Store, ctx: ReadContext, path: Path):
    first = import_file(store, "apple-health", path, ctx)
    stored = _reading_count(store)
    assert first.records > 0 and first.new == stored, first.line()
    again = import_file(store, "apple-health", path, ctx, force=True)
    assert again.new == 0 and _reading_count(store) == stored, again.line()


def _one(path: Path, store: Store) -> tuple[Any, list[tuple[str, str, str]]]:
    summary = import_file(store, "ics", path, window(path))
    return summary, events_of(store, path)


RIE = REAL / "ics" / "recurring-ical-events"


def test_this_and_future_changes_keep_every_instance(store: Store) -> None:
    """A RANGE=THISANDFUTURE change moves the instances after it; each keeps its own key."""
    path = RIE / "issue_75_range_parameter.ics"
    expected = reference_instances(path, window(path))
    summary, rows = _one(path, store)
    assert expected and len(rows) == expected == summary.by_type["event"]
    assert len({rid for _, rid, _ in rows}) == expected


def test_events_without_uid_are_told_apart_by_content(store: Store) -> None:
    path = RIE / "issue_15_duplicated_events.ics"  # three UID-less events at one start
    _, rows = _one(path, store)
    assert len(rows) == 3 and all(uid.startswith("nouid-") for uid, _, _ in rows)
    # The key comes from the content, not from the order or the time of the import.
    store_rows = set(rows)
    import_file(store, "ics", path, window(path), force=True)
    assert set(events_of(store, path)) == store_rows


def test_date_and_datetime_matrix_keeps_all_fifteen(store: Store) -> None:
    """DATE/DATE-TIME/DURATION combinations around 2000-01-01, e.g. a DATE start with a
    DATE-TIME end as some clients write."""
    summary, rows = _one(RIE / "issue_201_test_matrix.ics", store)
    assert len(rows) == 15 and not summary.skipped, summary.line()


def test_a_property_written_twice_and_a_start_missing_are_repaired(store: Store) -> None:
    fiji = REAL / "ics" / "icalendar" / "pacific_fiji.ics"  # VTIMEZONE with RDATEs, 2 DTSTARTs
    _, rows = _one(fiji, store)
    assert [uid for uid, _, _ in rows] == ["noend123"]


def test_coros_field_sizes_and_null_compressed_speed_are_read(store, ctx) -> None:
    for name in ("coros-pace-2-cycling-misaligned-fields.fit", "null_compressed_speed_dist.fit"):
        path = REAL / "fit" / "fitparse" / name
        assert _sdk_reads(path)
        import_file(store, "fit", path, ctx)  # no refusal, no traceback


def test_a_changed_instance_without_dtstart_keeps_its_original_start(
    store: Store, tmp_path: Path
) -> None:
    """Google's export of a monthly series with one changed instance, that instance's
    DTSTART removed (error "'DTSTART'" before): it is read at its RECURRENCE-ID."""
    real = (RIE / "issue_62_moved_event.ics").read_bytes()
    changed = real.replace(b"DTSTART;TZID=Europe/Berlin:20211217T213000\r\n", b"").replace(
        b"DTSTART;TZID=Europe/Berlin:20211217T213000\n", b""
    )
    assert changed != real
    path = tmp_path / "moved_without_dtstart.ics"
    path.write_bytes(changed)
    summary = import_file(store, "ics", path, window(RIE / "issue_62_moved_event.ics"))
    assert not summary.skipped, summary.line()
    with store.session() as session:
        starts = session.execute(
            select(CalendarEvent.start_utc, CalendarEvent.recurrence_id).where(
                CalendarEvent.calendar_id == str(path.resolve())
            )
        ).all()
    moved = [s for s, rid in starts if rid == "20211231T203000Z"]
    assert len(moved) == 1 and moved[0].replace(tzinfo=UTC) == datetime(
        2021, 12, 31, 20, 30, tzinfo=UTC
    )
    assert len(starts) == len({rid for _, rid in starts})
