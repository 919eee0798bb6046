"""Alembic environment: runs on the engine the Store hands over (never reads an ini file)."""

from alembic import context
from sqlmodel import SQLModel

from bridge.store import models  # noqa: F401  (registers the tables)

engine = context.config.attributes["engine"]

with engine.begin() as connection:
    context.configure(
        connection=connection,
        target_metadata=SQLModel.metadata,
        # SQLite cannot ALTER most things; batch mode copies the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
    )
    context.run_migrations()
