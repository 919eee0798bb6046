"""how sure the runner is of its belief: recommendations.belief_sd

Revision ID: i22_belief_sd
Revises: i18_revision_index
"""
from alembic import op
import sqlalchemy as sa


revision = 'i22_belief_sd'
down_revision = 'i18_revision_index'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('recommendations') as batch:
        batch.add_column(sa.Column('belief_sd', sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('recommendations') as batch:
        batch.drop_column('belief_sd')
