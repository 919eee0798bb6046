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


# Plain ALTER TABLE on both backends, never SQLite's batch rebuild: a rebuilt table loses
# its meter-change triggers (i40_people), and events would stop noting the days they touch.
def upgrade() -> None:
    op.add_column(
        "calendar_events",
        sa.Column("location", sa.String(300), nullable=False, server_default=""),
    )
    op.add_column(
        "calendar_events",
        sa.Column("organized_by_me", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    op.drop_column("calendar_events", "organized_by_me")
    op.drop_column("calendar_events", "location")
