"""Alembic environment: runs on the engine the Store hands over (never reads an ini file)."""

from alembic import context
from sqlmodel import SQLModel

from bridge.store import models  # noqa: F401  (registers the tables)

engine = context.config.attributes["engine"]

with engine.begin() as connection:
    # Migrations read and rewrite every person's rows: the test suite's check that each
    # statement names one person does not apply to them (pooled: taken off afterwards).
    connection.info["migrating"] = True
    try:
        context.configure(
            connection=connection,
            target_metadata=SQLModel.metadata,
            # SQLite cannot ALTER most things; batch mode copies the table instead.
            render_as_batch=connection.dialect.name == "sqlite",
        )
        context.run_migrations()
    finally:
        connection.info.pop("migrating", None)
