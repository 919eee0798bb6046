"""meter_changes: a day waits once, by a unique index, so a written row costs one probe

Revision ID: i18_cheaper_notes
Revises: i17_meter_changes

The SQLite row triggers of i17_meter_changes looked the day up (NOT EXISTS) and then
inserted it, on every row an import writes: an Apple export's first import took 3.4x its
floor instead of 2.0x. A unique index over the waiting notes (kind, day where not taken)
makes each row's note one insert that does nothing on a conflict, with the same meaning: a day waits once, and a
write while a cycle holds it (taken) adds a new waiting note. PostgreSQL's statement
triggers insert with ON CONFLICT DO NOTHING against the same index.
"""

import sqlalchemy as sa
from alembic import op

revision = "i18_cheaper_notes"
down_revision = "i17_meter_changes"
branch_labels = None
depends_on = None

WATCHED = (("readings", "r"), ("calendar_events", "e"))
OPS = {"INSERT": ("NEW",), "UPDATE": ("OLD", "NEW"), "DELETE": ("OLD",)}
TRANSITION = {"NEW": "new_rows", "OLD": "old_rows"}
INDEX = "ux_meter_changes_waiting"


def _sqlite(table: str, kind: str, op_name: str, *, probe: bool) -> list[str]:
    def note(row: str) -> str:
        day = f"substr({row}.start_utc, 1, 10)"
        if probe:
            # An upsert, not OR IGNORE: the statement that fires a trigger overrides the
            # trigger's own OR clause (an import's upsert would abort on a waiting day).
            return (
                f"INSERT INTO meter_changes (kind, day, taken) VALUES ('{kind}', {day}, 0) "
                "ON CONFLICT (kind, day) WHERE taken = 0 DO NOTHING; "
            )
        return (  # as i17_meter_changes wrote it
            f"INSERT INTO meter_changes (kind, day, taken) SELECT '{kind}', {day}, 0 "
            f"WHERE NOT EXISTS (SELECT 1 FROM meter_changes WHERE kind = '{kind}' "
            f"AND day = {day} AND taken = 0); "
        )

    name = f"meter_changes_{table}_{op_name.lower()}"
    body = "".join(note(row) for row in OPS[op_name])
    return [
        f"DROP TRIGGER IF EXISTS {name}",
        f"CREATE TRIGGER {name} AFTER {op_name} ON {table} FOR EACH ROW BEGIN {body}END",
    ]


def _postgresql(table: str, kind: str, op_name: str, *, probe: bool) -> list[str]:
    conflict = " ON CONFLICT (kind, day) WHERE NOT taken DO NOTHING" if probe else ""
    body = "".join(
        f"INSERT INTO meter_changes (kind, day, taken) SELECT DISTINCT '{kind}', "
        f"to_char(start_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD'), false FROM {TRANSITION[row]}"
        f"{conflict}; "
        for row in OPS[op_name]
    )
    name = f"meter_changes_{table}_{op_name.lower()}"
    # The trigger calls the function by name: replacing the body is enough.
    return [
        f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN {body}RETURN NULL; END $$"
    ]


def _rewrite(*, probe: bool) -> None:
    write = _sqlite if op.get_bind().dialect.name == "sqlite" else _postgresql
    for table, kind in WATCHED:
        for op_name in OPS:
            for statement in write(table, kind, op_name, probe=probe):
                op.execute(statement)


def upgrade() -> None:
    # Notes waiting twice (none are, but a crash between two cycles' writes could leave
    # them) would stop the unique index: keep the oldest of each.
    op.execute(
        "DELETE FROM meter_changes WHERE NOT taken AND id NOT IN (SELECT min(id) FROM "
        "meter_changes WHERE NOT taken GROUP BY kind, day)"
        if op.get_bind().dialect.name != "sqlite"
        else "DELETE FROM meter_changes WHERE taken = 0 AND id NOT IN (SELECT min(id) FROM "
        "meter_changes WHERE taken = 0 GROUP BY kind, day)"
    )
    op.create_index(
        INDEX,
        "meter_changes",
        ["kind", "day"],
        unique=True,
        sqlite_where=sa.text("taken = 0"),
        postgresql_where=sa.text("NOT taken"),
    )
    _rewrite(probe=True)


def downgrade() -> None:
    _rewrite(probe=False)
    op.drop_index(INDEX, table_name="meter_changes")
