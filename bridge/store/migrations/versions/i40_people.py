"""people: every row belongs to a person, first in every natural key

Revision ID: i40_people
Revises: i18_cheaper_notes

A household or a study shares one database. Each table gains `person` (NOT NULL, no
default: a row nobody owns is refused, never filed under someone), put first in each
natural key and each index the cycle reads by, and `meta` is keyed by (person, key). The
rows of a store made before people existed become the person the Store is opened for
(`me` unless a name is given), nothing else changes. The meter-change triggers note the
person of each written day.

SQLite rebuilds each table (batch mode) with foreign keys off, since a rebuilt parent table
is briefly absent, and checks them all afterwards; PostgreSQL alters in place.
"""

import sqlalchemy as sa
from alembic import context, op

revision = "i40_people"
down_revision = "i18_cheaper_notes"
branch_labels = None
depends_on = None

PERSON_MAX = 64
# table: (unique constraint to widen with person, its columns after person) or None
UNIQUE = {
    "readings": (
        "uq_readings_natural",
        ["source", "metric", "origin", "start_utc", "end_utc", "label"],
    ),
    "calendar_events": ("uq_events_natural", ["source", "calendar_id", "uid", "recurrence_id"]),
    "sync_state": ("uq_sync_state", ["source", "stream", "partition"]),
    "imported_files": ("uq_imported_files", ["kind", "sha256"]),
    "meter_snapshots": ("uq_meter_slot", ["local_date", "slot"]),
    "meter_changes": None,
    "recommendations": ("uq_recommendation_slot", ["local_date", "slot"]),
    "feedback": ("uq_feedback_recommendation", ["recommendation_id"]),
    "notifications": ("uq_notification_channel", ["recommendation_id", "channel"]),
    "google_writes": ("uq_google_write_rec", ["recommendation_id"]),
    "implicit_watch": ("uq_implicit_watch", ["recommendation_id", "event_id"]),
    "classifier_corrections": ("uq_classifier_corrections_pattern", ["pattern"]),
    "classifier_llm_cache": ("uq_classifier_llm_cache", ["model", "title_key"]),
    "tasks": ("uq_tasks_natural", ["source", "list_id", "uid"]),
    "task_history": ("uq_task_history", ["task_id", "kind", "at_utc"]),
}
REVISED = sa.text("revision != ''")
# name: (table, columns after person, keyword arguments)
INDEXES = {
    "ix_readings_metric_start": ("readings", ["metric", "start_utc"], {}),
    "ix_readings_revision": (
        "readings",
        ["source", "revision"],
        {"sqlite_where": REVISED, "postgresql_where": REVISED},
    ),
    "ix_events_start": ("calendar_events", ["start_utc"], {}),
    "ix_meter_changes_day": ("meter_changes", ["kind", "day", "taken"], {}),
    "ux_meter_changes_waiting": (
        "meter_changes",
        ["kind", "day"],
        {
            "unique": True,
            "sqlite_where": sa.text("taken = 0"),
            "postgresql_where": sa.text("NOT taken"),
        },
    ),
    "ix_tasks_due": ("tasks", ["due_utc"], {}),
    "ix_task_history_at": ("task_history", ["at_utc"], {}),
}

# The meter-change notes (i17_meter_changes, i18_cheaper_notes), now with the person.
WATCHED = (("readings", "r"), ("calendar_events", "e"))
OPS = {"INSERT": ("NEW",), "UPDATE": ("OLD", "NEW"), "DELETE": ("OLD",)}
TRANSITION = {"NEW": "new_rows", "OLD": "old_rows"}


def _sqlite_triggers(*, person: bool) -> list[str]:
    statements = []
    for table, kind in WATCHED:
        for op_name, rows in OPS.items():
            name = f"meter_changes_{table}_{op_name.lower()}"
            who, key = ("person, ", "person, ") if person else ("", "")
            body = "".join(
                f"INSERT INTO meter_changes ({who}kind, day, taken) VALUES "
                f"({row + '.person, ' if person else ''}'{kind}', "
                f"substr({row}.start_utc, 1, 10), 0) "
                f"ON CONFLICT ({key}kind, day) WHERE taken = 0 DO NOTHING; "
                for row in rows
            )
            statements += [
                f"DROP TRIGGER IF EXISTS {name}",
                f"CREATE TRIGGER {name} AFTER {op_name} ON {table} FOR EACH ROW BEGIN {body}END",
            ]
    return statements


def _postgresql_functions(*, person: bool) -> list[str]:
    statements = []
    who = "person, " if person else ""
    for table, kind in WATCHED:
        for op_name, rows in OPS.items():
            name = f"meter_changes_{table}_{op_name.lower()}"
            body = "".join(
                f"INSERT INTO meter_changes ({who}kind, day, taken) SELECT DISTINCT {who}'{kind}', "
                f"to_char(start_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD'), false "
                f"FROM {TRANSITION[row]} ON CONFLICT ({who}kind, day) WHERE NOT taken DO NOTHING; "
                for row in rows
            )
            # The trigger calls the function by name: replacing the body is enough.
            statements.append(
                f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
                f"BEGIN {body}RETURN NULL; END $$"
            )
    return statements


def _foreign_keys(on: bool) -> None:
    """SQLite: a rebuilt parent table is dropped and renamed back, which its children's
    keys would refuse; so keys are off while tables are rebuilt, then every key is checked.
    (The pragma works outside a transaction, where pysqlite runs DDL.)"""
    bind = op.get_bind()
    if on:
        broken = bind.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
        if broken:
            raise RuntimeError(f"i40_people: foreign keys broken by the rebuild: {broken[:5]}")
    bind.exec_driver_sql(f"PRAGMA foreign_keys = {'ON' if on else 'OFF'}")


def _rekey_meta(first: str) -> None:
    """meta keyed by (person, key): a new table, the rows copied, swapped in."""
    op.create_table(
        "meta_people",
        sa.Column("person", sa.String(PERSON_MAX), nullable=False),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False, server_default=""),
        sa.PrimaryKeyConstraint("person", "key", name="pk_meta"),
    )
    op.execute(
        sa.text(
            "INSERT INTO meta_people (person, key, value) SELECT :p, key, value FROM meta"
        ).bindparams(p=first)
    )
    op.drop_table("meta")
    op.rename_table("meta_people", "meta")


def _unkey_meta() -> None:
    op.create_table(
        "meta_single",
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False, server_default=""),
        # The name PostgreSQL gave the original table's key (pk_meta is still taken here).
        sa.PrimaryKeyConstraint("key", name="meta_pkey"),
    )
    op.execute("INSERT INTO meta_single (key, value) SELECT key, min(value) FROM meta GROUP BY key")
    op.drop_table("meta")
    op.rename_table("meta_single", "meta")


def _begin(sqlite: bool) -> None:
    """Keys off and the notes' triggers dropped (SQLite: they live on the tables about to
    be rebuilt), and the indexes dropped: all are made anew in `_end`."""
    if sqlite:
        _foreign_keys(False)
        for table, _ in WATCHED:
            for op_name in OPS:
                op.execute(f"DROP TRIGGER IF EXISTS meter_changes_{table}_{op_name.lower()}")
    for name, (table, _, _) in INDEXES.items():
        op.drop_index(name, table_name=table)


def _end(sqlite: bool, *, person: bool) -> None:
    for name, (table, columns, kwargs) in INDEXES.items():
        op.create_index(name, table, ["person", *columns] if person else columns, **kwargs)
    for statement in (
        _sqlite_triggers(person=person) if sqlite else _postgresql_functions(person=person)
    ):
        op.execute(statement)
    if sqlite:
        _foreign_keys(True)


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    first = str(context.config.attributes.get("person") or "me")
    _begin(sqlite)
    for table, unique in UNIQUE.items():
        with op.batch_alter_table(table) as batch:
            batch.add_column(
                sa.Column("person", sa.String(PERSON_MAX), nullable=False, server_default=first)
            )
            if unique:
                batch.drop_constraint(unique[0], type_="unique")
                batch.create_unique_constraint(unique[0], ["person", *unique[1]])
        with op.batch_alter_table(table) as batch:
            batch.alter_column("person", server_default=None)
    _rekey_meta(first)
    _end(sqlite, person=True)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    _begin(sqlite)
    for table, unique in UNIQUE.items():
        with op.batch_alter_table(table) as batch:
            if unique:
                batch.drop_constraint(unique[0], type_="unique")
                batch.create_unique_constraint(unique[0], unique[1])
            batch.drop_column("person")
    _unkey_meta()
    _end(sqlite, person=False)
