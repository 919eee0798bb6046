"""The faces' command line: `bridge.cli.main:app` with one module per group of commands."""
