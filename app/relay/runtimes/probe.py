"""What ``doctor`` asks of a runtime — is it installed, which version — without its adapter.

Each probe is a function of a few static facts (:class:`~relay.runtimes.registry.RuntimeFacts`:
the executable's name, how to install it, the npm package, the API key's variable…) and the
environment, so ``relay-cli doctor`` answers for every runtime while importing no adapter (no
pydantic event models, no parsers, no HTTP client: docs/performance.md "relay-cli start-up").
The adapters' own :meth:`~relay.runtimes.base.RuntimeAdapter.info` call the same functions.
This module imports only the standard library and :mod:`relay.core`'s light parts.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from relay.core import jsonvalue
from relay.core.errors import CliNotFoundError
from relay.core.executables import find_executable

_VERSION = re.compile(r"\d+\.\d+\.\d+")
VERSION_TIMEOUT = 10.0
#: ``relay-cli doctor`` waits this long for Ollama
PROBE_TIMEOUT = 1.5
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"


@dataclass(frozen=True)
class RuntimeInfo:
    """What ``doctor`` reports for a runtime."""

    runtime: str
    executable: str | None
    version: str | None
    problem: str | None = None
    hint: str | None = None


def bin_name(runtime: str) -> str:
    """The runtime as ``RELAY_<NAME>_BIN`` names it (``-`` as ``_``: ``RELAY_GEMINI_ACP_BIN``)."""
    return runtime.replace("-", "_")


def cli_info(runtime: str, binary: str, install_hint: str, env: Mapping[str, str]
             ) -> RuntimeInfo:
    """A CLI's executable and ``--version``, or what is wrong and how to fix it (never
    raises)."""
    try:
        exe = find_executable(bin_name(runtime), binary, install_hint, env=env)
    except CliNotFoundError as exc:
        return RuntimeInfo(runtime, None, None, problem=exc.message, hint=exc.hint)
    try:
        done = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, errors="replace",
            stdin=subprocess.DEVNULL, env=dict(env), timeout=VERSION_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return RuntimeInfo(runtime, exe, None,
                           problem=f"`{exe} --version` did not answer within {VERSION_TIMEOUT:g} s.",
                           hint="Run it in a terminal to see what it waits for.")
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return RuntimeInfo(runtime, exe, None, problem=f"Cannot run {exe}: {exc}.",
                           hint="Check that the file is executable. " + install_hint)
    # stdout, else stderr (where pi prints its version)
    text = (done.stdout or "").strip() or (done.stderr or "").strip()
    match = _VERSION.search(text)
    if done.returncode != 0 or match is None:
        detail = (done.stderr or text).strip().splitlines()
        why = detail[-1] if detail else f"exit code {done.returncode}"
        return RuntimeInfo(runtime, exe, None, problem=f"`{exe} --version` failed: {why}",
                           hint="Reinstall it. " + install_hint)
    return RuntimeInfo(runtime, exe, match.group(0))


def npm_info(runtime: str, binary: str, install_hint: str, package: str,
             env: Mapping[str, str]) -> RuntimeInfo:
    """An npm bridge (no ``--version`` flag): the version in its package's package.json."""
    try:
        exe = find_executable(bin_name(runtime), binary, install_hint, env=env)
    except CliNotFoundError as exc:
        return RuntimeInfo(runtime, None, None, problem=exc.message, hint=exc.hint)
    version = package_version(Path(exe), package)
    if version is None:
        return RuntimeInfo(runtime, exe, None, problem=f"Cannot tell which {package} {exe} is.",
                           hint="Reinstall it. " + install_hint)
    return RuntimeInfo(runtime, exe, version)


def package_version(exe: Path, package: str) -> str | None:
    """The version in ``package``'s package.json above the (symlink-resolved) ``exe``."""
    here = Path(os.path.realpath(exe)).parent
    for folder in (here, *here.parents):
        manifest = folder / "package.json"
        if not manifest.is_file():
            continue
        try:
            data = jsonvalue.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if isinstance(data, dict) and data.get("name") == package:
            version = data.get("version")
            return str(version) if version else None
    return None


def key_hint(runtime: str, account_provider: str, key_env: str | None) -> str:
    """How to give an HTTP runtime its key (an api_key account, or the variable)."""
    via = "" if runtime == account_provider else " and OPENAI_API=chat"
    return (f"Register a key: relay-cli accounts add {account_provider} <label> --auth api_key "
            f"--api-key-stdin (then run with --provider {account_provider}:<label>{via}), or "
            f"export {key_env}.")


def http_info(runtime: str, base: str, key_env: str | None, key_hint: str,
              env: Mapping[str, str]) -> RuntimeInfo:
    """A model API: its base URL, and whether its key is in the environment."""
    if key_env and not env.get(key_env):
        return RuntimeInfo(runtime, base, "HTTP API", problem=(
            f"No {key_env} in the environment (an api_key account brings its own)."),
            hint=key_hint)
    return RuntimeInfo(runtime, base, "HTTP API")


def ollama_host(env: Mapping[str, str]) -> str:
    """``OLLAMA_HOST`` as a base URL (``0.0.0.0`` means this machine)."""
    raw = (env.get("OLLAMA_HOST") or "").strip().rstrip("/")
    if not raw:
        return DEFAULT_OLLAMA_HOST
    if "://" not in raw:
        raw = "http://" + raw
    url = urlsplit(raw)
    host = "127.0.0.1" if url.hostname in (None, "", "0.0.0.0") else url.hostname
    return f"{url.scheme}://{host}:{url.port or 11434}"


def ollama_info(runtime: str, env: Mapping[str, str]) -> RuntimeInfo:
    """Ollama's version and model count, or why it cannot be reached."""
    base = ollama_host(env)
    url = urlsplit(base)
    try:  # nothing listening (the usual case): say so without loading an HTTP client
        socket.create_connection((url.hostname or "127.0.0.1", url.port or 11434),
                                 timeout=PROBE_TIMEOUT).close()
    except OSError as exc:
        return _unreachable(runtime, base, exc)
    import httpx

    try:
        with httpx.Client(timeout=PROBE_TIMEOUT, trust_env=False) as client:
            version = client.get(base + "/api/version").json().get("version")
            count = len(client.get(base + "/api/tags").json().get("models") or [])
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        return _unreachable(runtime, base, exc)
    shown = f"{version} ({count} model{'s' if count != 1 else ''})"
    if count == 0:
        return RuntimeInfo(runtime, base, shown, problem="Ollama has no model.",
                           hint="Pull one: ollama pull qwen3-coder")
    return RuntimeInfo(runtime, base, shown)


def _unreachable(runtime: str, base: str, exc: Exception) -> RuntimeInfo:
    return RuntimeInfo(runtime, base, None, problem=f"Ollama is not reachable at {base} "
                       f"({type(exc).__name__}).",
                       hint="Start it (`ollama serve`) or set OLLAMA_HOST.")
