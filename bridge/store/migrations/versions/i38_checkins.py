"""check-ins: how the person says they feel, the meters' yardstick

Revision ID: i38_checkins
Revises: i40_registry
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = 'i38_checkins'
down_revision = 'i40_registry'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('checkins',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('person', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('local_date', sa.Date(), nullable=False),
    sa.Column('slot', sa.Integer(), nullable=False),
    sa.Column('item', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('at_utc', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('utc_offset_min', sa.Integer(), nullable=False),
    sa.Column('value', sa.Float(), nullable=False),
    sa.Column('scale_min', sa.Float(), nullable=False),
    sa.Column('scale_max', sa.Float(), nullable=False),
    sa.Column('score', sa.Float(), nullable=False),
    sa.Column('source', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('recorded_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('person', 'local_date', 'slot', 'item', name='uq_checkins_slot_item')
    )


def downgrade() -> None:
    op.drop_table('checkins')
