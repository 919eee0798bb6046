"""people registry: the people an installation keeps data for

Revision ID: i40_registry
Revises: i40_people

`person add|list|remove` keep this table. It holds names only (no health data), so a
household's admin may list it. A store that already holds rows registers every person
found in them; a new store registers the person it is opened for.
"""

from datetime import UTC, datetime

import sqlalchemy as sa
import sqlmodel
from alembic import context, op

revision = "i40_registry"
down_revision = "i40_people"
branch_labels = None
depends_on = None

# Tables whose rows say who is there (meta: every store that ran once; the rest: data).
HOLDERS = ("meta", "readings", "calendar_events", "recommendations", "tasks")


def upgrade() -> None:
    people = op.create_table(
        "people",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("added_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    )
    bind = op.get_bind()
    found: set[str] = set()
    for table in HOLDERS:
        found.update(n for (n,) in bind.execute(sa.text(f"SELECT DISTINCT person FROM {table}")))
    if not found:
        found.add(str(context.config.attributes.get("person") or "me"))
    now = datetime.now(UTC)
    op.bulk_insert(people, [{"name": name, "added_at": now} for name in sorted(found)])


def downgrade() -> None:
    op.drop_table("people")
