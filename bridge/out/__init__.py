"""What goes out: the JSON snapshot, notifications, the status report, backups."""

# The snapshot document's schema and version (bridge/schemas/snapshot.schema.json): here,
# apart from bridge/out/snapshot.py, so that `export --help` names it without importing
# the store.
SNAPSHOT_SCHEMA_ID = "rhythm-bridge/snapshot@1.3"
