"""Which slots a cycle recomputes over a long history: the database notes every written day
(triggers, migration i17_meter_changes), the recent weeks are compared by their prints, and
whatever way a day changed, the incremental result equals a full recompute."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import delete, func, select, update

from bridge.config import Settings
from bridge.cycle import meters as meter_step
from bridge.cycle.meters import recompute_meters
from bridge.intake.ingest import import_file
from bridge.store.models import CalendarEvent, MeterChange, MeterSnapshot, Reading
from tests.conftest import DEMO_NOW, SAMPLE
from tests.cycle.test_meter_recompute import add_reading
from tests.cycle.test_meter_recompute import snapshots as rows

FIRST = date(2026, 5, 3)  # the generated history: 200 days, up to the 18th of November


@pytest.fixture
def history(store, settings):
    from benchmarks.meters import load_into, synth

    readings, events = synth(FIRST, 200)
    load_into(store, readings[readings["metric"] != "heart_rate"], events)
    recompute_meters(store, settings, DEMO_NOW)
    assert recompute_meters(store, settings, DEMO_NOW) == 1
    return store


def slots_from(day: date) -> int:
    """Slots from `day`'s morning to this morning (DEMO_NOW is in the morning slot)."""
    return (DEMO_NOW.date() - day).days * 4 + 1


def equals_full_recompute(store, settings) -> None:
    incremental = rows(store)
    recompute_meters(store, settings, DEMO_NOW, full=True)
    assert rows(store) == incremental


def old_reading(store, metric: str, day: date) -> int:
    with store.session() as session:
        return session.execute(
            select(Reading.id)
            .where(
                Reading.metric == metric,
                Reading.start_utc >= datetime.combine(day, datetime.min.time(), tzinfo=UTC),
            )
            .order_by(Reading.start_utc)
            .limit(1)
        ).scalar_one()


def noted(store) -> set[tuple[str, str]]:
    with store.session() as session:
        return {tuple(row) for row in session.execute(select(MeterChange.kind, MeterChange.day))}


def test_a_revised_old_reading_recomputes_from_the_day_before_it(history, settings):
    rid = old_reading(history, "resting_hr", date(2026, 6, 10))
    with history.transaction() as session:
        session.execute(update(Reading).where(Reading.id == rid).values(value=81.0))
    assert noted(history) == {("r", "2026-06-10")}
    assert recompute_meters(history, settings, DEMO_NOW) == slots_from(date(2026, 6, 9))
    assert history.count(MeterChange) == 0
    equals_full_recompute(history, settings)
    assert recompute_meters(history, settings, DEMO_NOW) == 1


def test_a_deleted_old_reading_recomputes_from_the_day_before_it(history, settings):
    rid = old_reading(history, "hrv_sdnn", date(2026, 7, 1))
    with history.transaction() as session:
        session.execute(delete(Reading).where(Reading.id == rid))
    assert recompute_meters(history, settings, DEMO_NOW) == slots_from(date(2026, 6, 30))
    equals_full_recompute(history, settings)


def test_an_old_event_relabelled_reaches_back_a_week(history, settings):
    # The classifier relabels an August event: a deadline can look a week ahead, and the
    # database does not know titles, so an old event reaches back 8 days.
    with history.session() as session:
        ev = session.execute(
            select(CalendarEvent)
            .where(CalendarEvent.start_utc >= datetime(2026, 8, 12, tzinfo=UTC))
            .order_by(CalendarEvent.start_utc)
            .limit(1)
        ).scalar_one()
    with history.transaction() as session:
        session.execute(
            update(CalendarEvent).where(CalendarEvent.id == ev.id).values(action="LEARN")
        )
    day = ev.start_utc.date()
    assert recompute_meters(history, settings, DEMO_NOW) == slots_from(day - timedelta(days=8))
    equals_full_recompute(history, settings)


def test_a_day_written_while_a_cycle_computes_is_seen_by_the_next(history, settings, monkeypatch):
    from mappings import meters as mapper

    real = mapper.compute_slots
    written = []

    def compute_then_write(*args, **kwargs):
        out = real(*args, **kwargs)
        if not written:  # after this cycle read its inputs: it cannot have seen the write
            add_reading(history, "resting_hr", datetime(2026, 6, 20, 7, 0, tzinfo=UTC), 88.0)
            written.append(True)
        return out

    add_reading(history, "hrv_sdnn", DEMO_NOW.replace(hour=3).astimezone(UTC), 30.0)
    monkeypatch.setattr(mapper, "compute_slots", compute_then_write)
    assert recompute_meters(history, settings, DEMO_NOW) < 4 * 3
    monkeypatch.setattr(mapper, "compute_slots", real)
    assert noted(history) == {("r", "2026-06-20")}  # the note of the write, not taken
    assert recompute_meters(history, settings, DEMO_NOW) == slots_from(date(2026, 6, 19))
    equals_full_recompute(history, settings)


def test_a_cycle_cut_short_leaves_the_notes_for_the_next(history, settings, monkeypatch):
    add_reading(history, "resting_hr", datetime(2026, 6, 20, 7, 0, tzinfo=UTC), 88.0)

    def broken(res):
        raise OSError("disk full")

    monkeypatch.setattr(meter_step, "_row", broken)
    with pytest.raises(OSError):
        recompute_meters(history, settings, DEMO_NOW)
    monkeypatch.undo()
    assert noted(history) == {("r", "2026-06-20")}
    assert recompute_meters(history, settings, DEMO_NOW) == slots_from(date(2026, 6, 19))
    equals_full_recompute(history, settings)


@pytest.mark.parametrize(
    "change",
    [
        {"timezone": "Europe/Lisbon"},
        {"slots": {"boundaries": ["06:00", "12:00", "18:00", "23:00"]}},
        {"meters": {"stale_after_hours": 24}},
    ],
    ids=["zone", "slots", "freshness"],
)
def test_a_new_zone_slots_or_freshness_recompute_everything(history, settings, change):
    changed = Settings.model_validate(
        {**settings.model_dump(mode="json", exclude_defaults=True), **change}
    )
    now = DEMO_NOW.astimezone(changed.tz)
    with history.session() as session:
        first = session.execute(select(func.min(MeterSnapshot.local_date))).scalar_one()
    done = recompute_meters(history, changed, now)
    assert done >= slots_from(first) - 4
    with history.session() as session:
        assert session.execute(select(func.min(MeterSnapshot.computed_at))).scalar_one() > (
            datetime.now(UTC) - timedelta(minutes=5)
        )


def test_every_writer_is_noted_and_a_cycle_takes_the_notes(store, settings, ctx):
    # The file importer's fast path, the upsert helper, a plain UPDATE and DELETE.
    import_file(store, "apple-health", SAMPLE / "apple_health_export.zip", ctx)
    import_file(store, "ics", SAMPLE / "calendar.ics", ctx)
    with store.session() as session:
        notes = session.execute(select(MeterChange.kind, MeterChange.day)).all()
        days = {s.date().isoformat() for s in session.execute(select(Reading.start_utc)).scalars()}
    noted = {d for k, d in notes if k == "r"}
    # Every day with a reading is noted, once while it waits (PostgreSQL: once a statement).
    assert days and days <= noted
    assert {k for k, _ in notes} == {"r", "e"}
    recompute_meters(store, settings, DEMO_NOW)
    assert store.count(MeterChange) == 0
    with store.transaction() as session:
        session.execute(update(CalendarEvent).values(action="ADMIN_WORK"))
    with store.session() as session:
        assert set(session.execute(select(MeterChange.kind)).scalars()) == {"e"}
    recompute_meters(store, settings, DEMO_NOW)
    with store.transaction() as session:
        session.execute(delete(Reading).where(Reading.metric == "resting_hr"))
    with store.session() as session:
        assert session.execute(select(func.count()).select_from(MeterChange)).scalar() >= 1
