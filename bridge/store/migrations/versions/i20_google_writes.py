"""google_writes: the events written to the person's Google calendar (opt-in write-back)

Revision ID: i20_google_writes
Revises: i22_belief_sd
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = 'i20_google_writes'
down_revision = 'i22_belief_sd'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('google_writes',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('recommendation_id', sa.Integer(), nullable=False),
    sa.Column('calendar_id', sqlmodel.sql.sqltypes.AutoString(length=300), nullable=False),
    sa.Column('event_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('state', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('content_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('updated_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['recommendation_id'], ['recommendations.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('recommendation_id', name='uq_google_write_rec')
    )


def downgrade() -> None:
    op.drop_table('google_writes')
