"""Where a runtime's executable is: ``RELAY_<RUNTIME>_BIN`` first, then PATH.

Apart from :mod:`relay.core.procs` (asyncio, psutil) so that ``relay-cli doctor`` finds the
CLIs without loading what runs them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

from relay.core.errors import CliNotFoundError


def find_executable(runtime: str, default_name: str, install_hint: str,
                    env: Mapping[str, str] | None = None) -> str:
    """Locate a runtime's executable: ``RELAY_<RUNTIME>_BIN`` first, then PATH.

    Raises:
        CliNotFoundError: naming the CLI and how to install it.
    """
    env = os.environ if env is None else env
    var = f"RELAY_{runtime.upper()}_BIN"
    override = env.get(var)
    if override:
        found = shutil.which(override, path=env.get("PATH"))
        if found:
            return found
        raise CliNotFoundError(
            f"{var} points at {override!r}, which is not an executable file.",
            f"Fix {var} or unset it to use `{default_name}` from PATH.",
        )
    found = shutil.which(default_name, path=env.get("PATH"))
    if found is None:
        raise CliNotFoundError(
            f"The {runtime} CLI (`{default_name}`) is not installed or not on PATH.",
            f"{install_hint} — or set {var} to its path.",
        )
    return found
