"""People in one store: the migration that gives every row its person, and a Store that
reads and writes only its person's rows (on SQLite and, with RB_TEST_DATABASE_URL, on
PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from alembic import command
from sqlalchemy import func, select, text

from bridge.errors import StoreError
from bridge.store import Store, upsert
from bridge.store.db import OWNED, _alembic_config, make_engine
from bridge.store.models import (
    CalendarEvent,
    Feedback,
    MeterChange,
    Reading,
    Recommendation,
    Task,
    TaskChange,
)
from tests.people import unscoped

BEFORE_PEOPLE = "i18_cheaper_notes"
T0 = datetime(2026, 11, 19, 6, 0, tzinfo=UTC)


def _store_before_people(url: str) -> None:
    """A store as the release before people left it, with a row in every kind of table."""
    engine = make_engine(url)
    try:
        command.upgrade(_alembic_config(engine), BEFORE_PEOPLE)
        stamp = "2026-11-19 06:00:00.000000"
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO readings (source, metric, origin, start_utc, end_utc, "
                    "utc_offset_min, value, unit, label, device, revision, imported_at) VALUES "
                    "('apple_health', 'steps', 'Watch', :t, :t, 60, 120, 'count', '', '', '', :t)"
                ),
                {"t": stamp},
            )
            conn.execute(
                text(
                    "INSERT INTO calendar_events (source, calendar_id, uid, recurrence_id, title, "
                    "start_utc, end_utc, utc_offset_min, all_day, status, transparency, "
                    "event_type, attendee_count, self_response, content_hash, classified_hash, "
                    "updated_at) VALUES ('ics', 'cal', 'u1', '', 'Stand-up', :t, :t, 60, false, "
                    "'confirmed', 'opaque', 'default', 0, '', 'h', '', :t)"
                ),
                {"t": stamp},
            )
            conn.execute(
                text(
                    "INSERT INTO recommendations (id, local_date, slot, timestep, action, belief, "
                    "rationale, runner, runner_version, observation, created_at) VALUES "
                    "(7, '2026-11-19', 0, 0, 'DEEP_WORK', 'null', '', 'bundled', '', '{}', :t)"
                ),
                {"t": stamp},
            )
            conn.execute(
                text(
                    "INSERT INTO feedback (recommendation_id, response, reward, channel, "
                    "created_at) VALUES (7, 'accepted', 1.0, 'cli', :t)"
                ),
                {"t": stamp},
            )
            conn.execute(
                text(
                    "INSERT INTO tasks (id, source, list_id, uid, title, status, due_all_day, "
                    "deleted, priority, parent, content_hash, classified_hash, updated_at) VALUES "
                    "(3, 'ics', 'l', 't1', 'Taxes', 'open', false, false, 0, '', 'h', '', :t)"
                ),
                {"t": stamp},
            )
            conn.execute(
                text(
                    "INSERT INTO task_history (task_id, kind, at_utc, recorded_at) "
                    "VALUES (3, 'created', :t, :t)"
                ),
                {"t": stamp},
            )
            conn.execute(text("INSERT INTO meta (key, value) VALUES ('last_cycle_at', 'x')"))
    finally:
        engine.dispose()


def _counts(store: Store) -> dict[str, int]:
    return {m.__tablename__: store.count(m) for m in OWNED}  # type: ignore[attr-defined]


@pytest.mark.parametrize("person", ["me", "ana"])
def test_a_store_from_before_people_becomes_one_persons_with_nothing_lost(
    database_url: str, person: str
) -> None:
    _store_before_people(database_url)
    store = Store(database_url, person=person)
    try:
        counts = _counts(store)
        # Every row made before is the person's; the triggers' notes of the inserts too.
        assert counts["readings"] == counts["calendar_events"] == 1
        assert counts["recommendations"] == counts["feedback"] == 1
        assert counts["tasks"] == counts["task_history"] == 1
        assert counts["meter_changes"] == 2  # the day of the reading and of the event
        assert store.get_meta("last_cycle_at") == "x"
        with store.session() as session:
            fb = session.execute(select(Feedback)).scalar_one()
            assert (fb.person, fb.recommendation_id, fb.response) == (person, 7, "accepted")
        other = Store(database_url, person="somebody-else")
        try:
            assert set(_counts(other).values()) == {0}
            assert other.get_meta("last_cycle_at") is None
        finally:
            other.dispose()
    finally:
        store.dispose()


def test_the_same_natural_key_is_one_row_per_person(database_url: str) -> None:
    ana, ben = Store(database_url, person="ana"), Store(database_url, person="ben")
    row = {
        "source": "whoop",
        "metric": "resting_hr",
        "origin": "WHOOP",
        "start_utc": T0,
        "end_utc": T0,
        "utc_offset_min": 60,
        "unit": "bpm",
        "label": "",
        "device": "",
        "revision": "",
        "imported_at": T0,
    }
    keys = ("source", "metric", "origin", "start_utc", "end_utc", "label")
    try:
        for store, value in ((ana, 51.0), (ben, 64.0), (ana, 51.0)):
            with store.transaction() as session:
                upsert(session, Reading, [{**row, "value": value}], keys=keys, update=("value",))
        for store, value in ((ana, 51.0), (ben, 64.0)):
            with store.session() as session:
                assert session.execute(select(Reading.value)).scalars().all() == [value]
        # Each write noted its day for its own person's meters only.
        for store in (ana, ben):
            with store.session() as session:
                assert session.execute(select(func.count()).select_from(MeterChange)).scalar() == 1
    finally:
        ana.dispose()
        ben.dispose()


def test_orm_reads_updates_and_deletes_stay_with_the_person(database_url: str) -> None:
    ana, ben = Store(database_url, person="ana"), Store(database_url, person="ben")
    try:
        for store in (ana, ben):
            with store.transaction() as session:
                session.add(
                    Recommendation(
                        local_date=T0.date(),
                        slot=0,
                        timestep=0,
                        action="EXERCISE",
                        runner="bundled",
                        created_at=T0,
                    )
                )
        with ben.session() as session:
            theirs = session.execute(select(Recommendation.id)).scalar_one()
        with ana.session() as session:
            mine = session.execute(select(Recommendation)).scalar_one()
            assert mine.person == "ana"
            # Another person's row is not there, even asked for by its id.
            assert session.get(Recommendation, theirs) is None
        with ana.transaction() as session:
            from sqlalchemy import delete, update

            assert (
                session.execute(update(Recommendation).values(action="REST")).rowcount  # type: ignore[attr-defined]
                == 1
            )
            session.execute(delete(TaskChange))
            session.execute(delete(Task))
        with ben.session() as session:
            assert session.execute(select(Recommendation.action)).scalar_one() == "EXERCISE"
            assert session.execute(select(func.count(CalendarEvent.id))).scalar() == 0
    finally:
        ana.dispose()
        ben.dispose()


def test_a_session_that_names_no_person_is_refused(database_url: str) -> None:
    from sqlmodel import Session

    store = Store(database_url)
    try:
        with Session(store.engine) as session, pytest.raises(StoreError, match="without a person"):
            session.execute(select(Reading))
    finally:
        store.dispose()


@pytest.mark.parametrize("name", ["", "Ana", "ana smith", "../ana", "a" * 65, "-ana"])
def test_a_person_name_must_be_plain(database_url: str, name: str) -> None:
    with pytest.raises(StoreError, match="person name"):
        Store(database_url, person=name)


def test_the_suite_check_finds_a_read_that_names_no_person() -> None:
    assert unscoped("SELECT readings.id FROM readings WHERE readings.metric = ?")
    assert unscoped(
        "SELECT t.id FROM tasks AS t JOIN task_history AS h ON h.task_id = t.id WHERE t.person = ?"
    )
    assert unscoped("DELETE FROM meter_changes WHERE meter_changes.taken = 1")
    assert not unscoped("SELECT readings.id FROM readings WHERE readings.person = ?")
    assert not unscoped("SELECT id FROM meta WHERE person = ? AND key = ?")
    assert not unscoped("INSERT INTO readings (person, source) VALUES (?, ?)")
    assert not unscoped("SELECT version_num FROM alembic_version")
    # An object loaded through a scoped read, written back by its id.
    assert not unscoped("UPDATE recommendations SET action=? WHERE recommendations.id = ?")
    assert unscoped("UPDATE recommendations SET action=? WHERE recommendations.id IN (?, ?)")


def test_the_migration_goes_back_and_forth_keeping_the_one_persons_rows(database_url: str) -> None:
    store = Store(database_url)
    try:
        with store.transaction() as session:
            store.set_meta(session, "last_cycle_at", "x")
        cfg = _alembic_config(store.engine)
        command.downgrade(cfg, BEFORE_PEOPLE)
        with store.engine.connect() as conn:
            # The schema before people: no person to name (the suite's check is off for it).
            conn.info["migrating"] = True
            try:
                rows = conn.execute(text("SELECT key, value FROM meta")).all()
            finally:
                conn.info.pop("migrating")
        assert rows == [("last_cycle_at", "x")]
        command.upgrade(cfg, "head")
        assert store.get_meta("last_cycle_at") == "x"
    finally:
        store.dispose()


def test_a_store_from_before_people_registers_its_one_person(database_url: str) -> None:
    _store_before_people(database_url)
    store = Store(database_url, person="ana")
    try:
        assert store.people() == ["ana"]
    finally:
        store.dispose()


def test_a_new_store_registers_the_person_it_is_opened_for(database_url: str) -> None:
    store = Store(database_url, person="bo")
    try:
        assert store.people() == ["bo"]
        assert store.add_person("ana") is True
        assert store.add_person("ana") is False
        assert store.people() == ["ana", "bo"]
        with pytest.raises(StoreError, match="person name"):
            store.add_person("Ana Smith")
    finally:
        store.dispose()


def test_removing_a_person_deletes_their_rows_and_nobody_elses(database_url: str) -> None:
    _store_before_people(database_url)
    me = Store(database_url)  # the old store's rows became "me"
    try:
        ana = me.as_person("ana")
        me.add_person("ana")
        with ana.transaction() as session:
            upsert(
                session,
                Reading,
                [
                    {
                        "source": "apple_health",
                        "metric": "steps",
                        "origin": "Watch",
                        "start_utc": T0,
                        "end_utc": T0,
                        "value": 5.0,
                        "imported_at": T0,
                    }
                ],
                keys=("source", "metric", "origin", "start_utc", "end_utc", "label"),
            )
            ana.set_meta(session, "last_cycle_at", "y")
        before = _counts(me)
        deleted = me.remove_person("ana")
        assert deleted["readings"] == 1 and deleted["meta"] == 1
        assert _counts(ana) == {name: 0 for name in before}  # nothing of ana is left
        assert _counts(me) == before  # and nothing of me went with it
        assert me.people() == ["me"]
        assert me.remove_person("ana") == {}
        removed_me = me.remove_person("me")
        assert {"readings", "calendar_events", "recommendations", "feedback", "tasks"} <= set(
            removed_me
        )
        assert all(n == 0 for n in _counts(me).values())
    finally:
        me.dispose()
