"""Frozen entry point of ``relay-cli``; the same as the ``relay-cli`` console script."""

import sys

from relay.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
