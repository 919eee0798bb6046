"""meter_changes: the days whose readings or events were written, for the meter step

Revision ID: i17_meter_changes
Revises: i20_google_writes

The meter step used to find changed days by reading a print of every day's inputs, and one
print of all the rows before the recent weeks: over years of history that read every row in
every cycle. Here the database itself notes each written day (triggers on readings and
calendar_events, every writer included: imports, syncs, pushes, revisions, the classifier),
so a cycle reads a handful of rows, whatever the length of the history.

SQLite: row triggers that add a day once while it waits (its writers are serialised, so a
day waiting to be taken is seen by the next write). PostgreSQL: statement triggers with
transition tables, one row per written day and statement (concurrent writers each add
theirs; nothing is skipped).
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "i17_meter_changes"
down_revision = "i20_google_writes"
branch_labels = None
depends_on = None

# (table, kind): "r" readings, "e" calendar events, as in bridge.cycle.meter_changes.
WATCHED = (("readings", "r"), ("calendar_events", "e"))
OPS = {"INSERT": ("NEW",), "UPDATE": ("OLD", "NEW"), "DELETE": ("OLD",)}


def _sqlite_trigger(table: str, kind: str, op_name: str) -> str:
    inserts = "".join(
        f"INSERT INTO meter_changes (kind, day, taken) "
        f"SELECT '{kind}', substr({row}.start_utc, 1, 10), 0 WHERE NOT EXISTS ("
        f"SELECT 1 FROM meter_changes WHERE kind = '{kind}' "
        f"AND day = substr({row}.start_utc, 1, 10) AND taken = 0); "
        for row in OPS[op_name]
    )
    return (
        f"CREATE TRIGGER meter_changes_{table}_{op_name.lower()} AFTER {op_name} ON {table} "
        f"FOR EACH ROW BEGIN {inserts}END"
    )


def _pg_trigger(table: str, kind: str, op_name: str) -> list[str]:
    name = f"meter_changes_{table}_{op_name.lower()}"
    tables = {"NEW": "new_rows", "OLD": "old_rows"}
    inserts = "".join(
        f"INSERT INTO meter_changes (kind, day, taken) SELECT DISTINCT '{kind}', "
        f"to_char(start_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD'), false FROM {tables[row]}; "
        for row in OPS[op_name]
    )
    referencing = " ".join(f"{row} TABLE AS {tables[row]}" for row in OPS[op_name])
    return [
        f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN {inserts}RETURN NULL; END $$",
        f"CREATE TRIGGER {name} AFTER {op_name} ON {table} REFERENCING {referencing} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {name}()",
    ]


def upgrade() -> None:
    op.create_table(
        "meter_changes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(length=1), nullable=False),
        sa.Column("day", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
        sa.Column("taken", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_meter_changes_day", "meter_changes", ["kind", "day", "taken"])
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table, kind in WATCHED:
        for op_name in OPS:
            statements = (
                [_sqlite_trigger(table, kind, op_name)]
                if sqlite
                else _pg_trigger(table, kind, op_name)
            )
            for statement in statements:
                op.execute(statement)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table, _ in WATCHED:
        for op_name in OPS:
            name = f"meter_changes_{table}_{op_name.lower()}"
            op.execute(f"DROP TRIGGER IF EXISTS {name}" + ("" if sqlite else f" ON {table}"))
            if not sqlite:
                op.execute(f"DROP FUNCTION IF EXISTS {name}()")
    op.drop_index("ix_meter_changes_day", table_name="meter_changes")
    op.drop_table("meter_changes")
