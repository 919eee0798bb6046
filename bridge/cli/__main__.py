"""`python -m bridge.cli`."""

from bridge.cli.main import main

main()
