"""calendar events: where they happen and whether the person organizes them

Revision ID: i42_event_place
Revises: i38_checkins

Two columns the classifier reads beside the title. Server defaults give the rows already
stored "" and false, which is what a source that does not say would write; nothing else in
the table (its person column, keys, indexes) changes.
"""

import sqlalchemy as sa
from alembic import op

revision = "i42_event_place"
down_revision = "i38_checkins"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("calendar_events") as batch:
        batch.add_column(sa.Column("location", sa.String(300), nullable=False, server_default=""))
        batch.add_column(
            sa.Column("organized_by_me", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("calendar_events") as batch:
        batch.drop_column("organized_by_me")
        batch.drop_column("location")
