"""What goes out: the JSON snapshot, notifications, the status report, backups."""
