"""The store: SQLModel tables on SQLite (default) or any SQLAlchemy URL."""

from bridge.store.db import Store, upsert

__all__ = ["Store", "upsert"]
