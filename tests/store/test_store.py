from datetime import UTC, datetime, timedelta

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlmodel import SQLModel

from bridge.errors import StoreError
from bridge.store import Store, upsert
from bridge.store.db import _alembic_config, schema_version, script_head
from bridge.store.models import Reading

T0 = datetime(2026, 11, 1, 6, 0, tzinfo=UTC)


def _row(i: int, value: float = 1.0) -> dict:
    return {
        "source": "apple_health",
        "metric": "steps",
        "origin": "watch",
        "start_utc": T0 + timedelta(minutes=i),
        "end_utc": T0 + timedelta(minutes=i + 1),
        "utc_offset_min": 60,
        "value": value,
        "unit": "count",
        "label": "",
        "device": "",
        "imported_at": T0,
    }


def test_migrations_build_exactly_the_models(store):

    head = ScriptDirectory.from_config(_alembic_config(store.engine)).get_current_head()
    assert schema_version(store.engine) == head
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), SQLModel.metadata)
    assert diff == []


def test_the_head_read_from_the_scripts_is_alembics_head(store):
    # migrate() skips alembic when the database is at this head: it must be the real one.
    script = ScriptDirectory.from_config(_alembic_config(store.engine))
    assert script_head() == script.get_current_head() == schema_version(store.engine)


@pytest.mark.sqlite_only
def test_sqlite_runs_in_wal_mode(store):
    with store.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"


def test_upsert_is_idempotent_and_updates_only_changes(store):
    keys = ("source", "metric", "origin", "start_utc", "end_utc", "label")
    rows = [_row(i) for i in range(100)]
    with store.transaction() as s:
        assert upsert(s, Reading, rows, keys=keys, update=("value",)) == 100
    with store.transaction() as s:
        assert upsert(s, Reading, rows, keys=keys, update=("value",)) == 0
    with store.transaction() as s:
        assert (
            upsert(s, Reading, [_row(5, value=9.0), _row(200)], keys=keys, update=("value",)) == 2
        )
    assert store.count(Reading) == 101
    with store.session() as s:
        assert s.get(Reading, 6).value == 9.0


def test_upsert_splits_large_batches_under_the_parameter_limit(store):
    keys = ("source", "metric", "origin", "start_utc", "end_utc", "label")
    with store.transaction() as s:
        assert upsert(s, Reading, [_row(i) for i in range(5000)], keys=keys) == 5000
    assert store.count(Reading) == 5000


def test_a_failed_transaction_writes_nothing(store):
    keys = ("source", "metric", "origin", "start_utc", "end_utc", "label")
    with pytest.raises(RuntimeError), store.transaction() as s:
        upsert(s, Reading, [_row(i) for i in range(10)], keys=keys)
        raise RuntimeError("boom")
    assert store.count(Reading) == 0


def test_instants_come_back_as_aware_utc(store):
    keys = ("source", "metric", "origin", "start_utc", "end_utc", "label")
    with store.transaction() as s:
        upsert(s, Reading, [_row(0)], keys=keys)
    with store.session() as s:
        assert s.get(Reading, 1).start_utc == T0


def test_reopening_is_harmless_and_a_newer_schema_is_refused(settings):
    a = Store(settings.database_url)
    a.dispose()
    b = Store(settings.database_url)
    with b.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    b.dispose()
    with pytest.raises(StoreError, match="newer than this rhythm-bridge knows"):
        Store(settings.database_url)


def test_the_event_place_migration_keeps_rows_and_fills_defaults(database_url):
    """i42_event_place: a stored event keeps everything and reads "" / false."""
    from alembic import command
    from sqlmodel import select

    from bridge.store.models import CalendarEvent

    store = Store(database_url)
    try:
        cfg = _alembic_config(store.engine)
        command.downgrade(cfg, "i38_checkins")
        stamp = "2026-11-19 06:00:00.000000"
        with store.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO calendar_events (person, source, calendar_id, uid, "
                    "recurrence_id, title, start_utc, end_utc, utc_offset_min, all_day, status, "
                    "transparency, event_type, attendee_count, self_response, content_hash, "
                    "classified_hash, updated_at) VALUES ('me', 'ics', 'cal', 'u1', '', "
                    "'Stand-up', :t, :t, 60, false, 'confirmed', 'opaque', 'default', 4, '', "
                    "'h', 'h', :t)"
                ),
                {"t": stamp},
            )
        command.upgrade(cfg, "head")
        with store.session() as s:
            (ev,) = s.exec(select(CalendarEvent)).all()
        assert (ev.title, ev.attendee_count, ev.content_hash) == ("Stand-up", 4, "h")
        assert (ev.location, ev.organized_by_me) == ("", False)
    finally:
        store.dispose()
