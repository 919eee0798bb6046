"""the free calendar window of a recommendation

Revision ID: i20_windows
Revises: i6_corrections
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = 'i20_windows'
down_revision = 'i6_corrections'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('recommendations') as batch:
        batch.add_column(sa.Column('window_start', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
        batch.add_column(sa.Column('window_end', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
        batch.add_column(sa.Column('window_reason', sa.Text(), nullable=True))
        batch.add_column(sa.Column('rescheduled_from', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('recommendations') as batch:
        batch.drop_column('rescheduled_from')
        batch.drop_column('window_reason')
        batch.drop_column('window_end')
        batch.drop_column('window_start')
