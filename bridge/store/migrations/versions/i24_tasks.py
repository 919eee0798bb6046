"""tasks and their history (Google Tasks, VTODO)

Revision ID: i24_tasks
Revises: i20_windows
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = 'i24_tasks'
down_revision = 'i20_windows'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('tasks',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('source', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('list_id', sqlmodel.sql.sqltypes.AutoString(length=300), nullable=False),
    sa.Column('uid', sqlmodel.sql.sqltypes.AutoString(length=300), nullable=False),
    sa.Column('title', sa.Text(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('due_utc', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('due_all_day', sa.Boolean(), nullable=False),
    sa.Column('created_utc', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('completed_utc', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('deleted', sa.Boolean(), nullable=False),
    sa.Column('priority', sa.Integer(), nullable=False),
    sa.Column('percent', sa.Integer(), nullable=True),
    sa.Column('parent', sqlmodel.sql.sqltypes.AutoString(length=300), nullable=False),
    sa.Column('content_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('action', sqlmodel.sql.sqltypes.AutoString(length=24), nullable=True),
    sa.Column('action_confidence', sa.Float(), nullable=True),
    sa.Column('classified_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('updated_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('source', 'list_id', 'uid', name='uq_tasks_natural')
    )
    op.create_index('ix_tasks_due', 'tasks', ['due_utc'], unique=False)
    op.create_table('task_history',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('task_id', sa.Integer(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('at_utc', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('due_utc', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('recorded_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['task_id'], ['tasks.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('task_id', 'kind', 'at_utc', name='uq_task_history')
    )
    op.create_index('ix_task_history_at', 'task_history', ['at_utc'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_task_history_at', table_name='task_history')
    op.drop_table('task_history')
    op.drop_index('ix_tasks_due', table_name='tasks')
    op.drop_table('tasks')
