"""Frozen entry point of ``relay`` (the window); the same as the ``relay`` gui-script."""

import sys

from relay.gui.launch import main

if __name__ == "__main__":
    sys.exit(main())
