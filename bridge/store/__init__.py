"""The store: SQLModel tables on SQLite (default) or any SQLAlchemy URL."""

from bridge.store.db import Store, rows_changed, upsert

__all__ = ["Store", "rows_changed", "upsert"]
