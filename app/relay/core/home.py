"""Where the data folder is, without loading the settings (relay-cli's quick commands use it).

The data folder comes from platformdirs; ``RELAY_HOME`` overrides it (tests and scripts rely
on this), and a front end's flag (``relay-cli --home``) overrides both.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import platformdirs

#: the event store's file in the data folder
DB_FILE = "relay.db"


def default_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    override = env.get("RELAY_HOME")
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_data_dir("relay", "relay"))
