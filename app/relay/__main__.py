"""``python -m relay`` opens the desktop window (``relay-cli`` is the headless front end)."""

from __future__ import annotations

import sys

from relay.gui.launch import main

if __name__ == "__main__":
    sys.exit(main())
