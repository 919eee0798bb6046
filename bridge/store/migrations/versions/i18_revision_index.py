"""readings: index only the rows that carry a revision key

Revision ID: i18_revision_index
Revises: i26_revisions

Most readings are final samples (revision ""): every one of them was a B-tree entry of the
(source, revision) index, under the same key, and kept up on every insert of an export
of millions of rows. Only the lookups of revised facts use that index, so it now covers
just the rows that have a revision key.
"""

import sqlalchemy as sa
from alembic import op

revision = "i18_revision_index"
down_revision = "i26_revisions"
branch_labels = None
depends_on = None

REVISED = sa.text("revision != ''")


def upgrade() -> None:
    op.drop_index("ix_readings_revision", table_name="readings")
    op.create_index(
        "ix_readings_revision",
        "readings",
        ["source", "revision"],
        sqlite_where=REVISED,
        postgresql_where=REVISED,
    )


def downgrade() -> None:
    op.drop_index("ix_readings_revision", table_name="readings")
    op.create_index("ix_readings_revision", "readings", ["source", "revision"])
