"""what the runner stated: recommendations.model_accept

Revision ID: i39_model_accept
Revises: i38_body_battery_labels

The P(accept) the runner gave the recommended action before any per-person correction
(bridge.runner.recalibrate): the correction is fitted on what was stated then, never on
what the runner says of an old answer now. Rows stored before this have none (null) and
are left out of the fit.
"""

import sqlalchemy as sa
from alembic import op

revision = "i39_model_accept"
down_revision = "i38_body_battery_labels"
branch_labels = None
depends_on = None


# Plain ALTER TABLE on both backends, never SQLite's batch rebuild (i42_event_place says why).
def upgrade() -> None:
    op.add_column("recommendations", sa.Column("model_accept", sa.Float(), nullable=True))


def downgrade() -> None:
    op.drop_column("recommendations", "model_accept")
