"""CLI commands grouped by area; each module registers itself on `bridge.cli.app`."""
