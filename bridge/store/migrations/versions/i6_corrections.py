"""classifier corrections and LLM answer cache

Revision ID: i6_corrections
Revises: i8_loop
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = 'i6_corrections'
down_revision = 'i8_loop'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('classifier_corrections',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('pattern', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
    sa.Column('title', sa.Text(), nullable=False),
    sa.Column('action', sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
    sa.Column('channel', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('updated_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('pattern', name='uq_classifier_corrections_pattern')
    )
    op.create_table('classifier_llm_cache',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('model', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('title_key', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
    sa.Column('action', sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
    sa.Column('confidence', sa.Float(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('model', 'title_key', name='uq_classifier_llm_cache')
    )


def downgrade() -> None:
    op.drop_table('classifier_llm_cache')
    op.drop_table('classifier_corrections')
