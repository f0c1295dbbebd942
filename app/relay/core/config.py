"""Settings: defaults → relay.toml in the data folder → RELAY_* environment → flags.

:func:`write_settings` writes settings back to relay.toml (the window's Preferences, and any
front end): validated by :class:`Config` first, the user's comments and other keys kept.

The data folder comes from platformdirs; ``RELAY_HOME`` overrides it (tests and
scripts rely on this): :func:`relay.core.home.default_home`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from relay.core.errors import ConfigError
from relay.core.fields import Delay, Seconds
from relay.core.home import DB_FILE, WORKTREES_DIR
from relay.core.home import default_home as default_home  # re-exported: callers import it here


class Config(BaseModel):
    """Resolved settings for one process."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    home: Path
    inactivity_timeout: Seconds = Field(
        default=900.0, description="A session whose agent says nothing for this long is "
        "stopped as stuck.")
    stop_grace: Seconds = 5.0
    demo_step_delay: Delay = 0.35
    #: the demo's simulated usage limit resets this many seconds after it is hit
    demo_reset_after: Delay = 5 * 3600.0
    #: the settings a user changes carry a description: the Preferences dialog's help text
    pause_timeout: Delay = Field(
        default=60.0, description="Before a handoff, how long to wait for a turn boundary or "
        "the end of a tool call before the agent is stopped mid-turn.")
    reset_margin: Delay = Field(
        default=30.0, description="Added to a limit's reset time before a waiting session "
        "resumes.")
    retry_max_delay: Delay = Field(
        default=60.0, description="A rate limit whose retry-after is at most this is retried "
        "on the same account.")
    max_retries: int = Field(
        default=3, ge=0, le=100, description="How often one entry is retried after short rate "
        "limits or overload before handing off.")
    verify_timeout: Seconds = Field(
        default=900.0, description="One acceptance command may run this long.")
    wallet_watermark: float = Field(
        default=0.95, gt=0, le=1, description="Hand a session off early once a window of its "
        "account is this full (0–1), at the next safe point; 1 turns it off.")
    wallet_horizon: Delay = Field(
        default=600.0, description="… or once the forecast says the window runs out within "
        "this many seconds.")
    wallet_preempt_confidence: Literal["high", "medium", "low"] = Field(
        default="medium", description="The least confidence a forecast needs to hand off "
        "early: medium acts on the providers' own figures only; low also on limits learned "
        "from transcripts.")
    wallet_interval: Delay = Field(
        default=60.0, description="While an agent works, its account is looked at this often "
        "(and at every turn end and official reading); 0 looks only then.")
    wallet_default_folders: bool = Field(
        default=True, description="Also count each CLI's default folder (~/.claude, ~/.codex, "
        "…) as the bare provider's account.")
    #: a pipeline step's lease: another engine takes the step over this long after its
    #: worker's last heartbeat (heartbeats come every third of it)
    pipeline_lease: Seconds = 30.0
    #: how often an engine with nothing to run looks at a pipeline run again
    pipeline_poll: Seconds = 1.0
    #: how often a worker renews its leases (default: a third of the lease). Longer than
    #: the lease lets other engines take steps over from a live worker — only for tests
    #: and demonstrations of the fence.
    pipeline_heartbeat: Seconds | None = None
    mcp_require_approval: bool = Field(
        default=True, description="Refuse sessions and pipeline runs that run commands "
        "(verify) when an MCP client starts them: nobody is there to approve them.")
    gui_theme: Literal["system", "light", "dark"] = Field(
        default="system", description="The window's colours: follow the desktop (system), or always "
        "light or dark; RELAY_THEME overrides it.")

    @property
    def db_path(self) -> Path:
        return self.home / DB_FILE

    @property
    def usage_index_path(self) -> Path:
        """The transcript usage index (pointers into the CLIs' own files; rebuildable)."""
        return self.home / "usage-index.sqlite"

    @property
    def worktrees_dir(self) -> Path:
        return self.home / WORKTREES_DIR

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def audit_path(self) -> Path:
        """The hash-chained audit log (``relay.core.audit``)."""
        return self.home / "audit.jsonl"


#: the file in the data folder that holds the user's settings
SETTINGS_FILE = "relay.toml"

_ENV_KEYS = {
    "RELAY_INACTIVITY_TIMEOUT": "inactivity_timeout",
    "RELAY_STOP_GRACE": "stop_grace",
    "RELAY_DEMO_STEP_DELAY": "demo_step_delay",
    "RELAY_DEMO_RESET_AFTER": "demo_reset_after",
    "RELAY_PAUSE_TIMEOUT": "pause_timeout",
    "RELAY_RESET_MARGIN": "reset_margin",
    "RELAY_RETRY_MAX_DELAY": "retry_max_delay",
    "RELAY_MAX_RETRIES": "max_retries",
    "RELAY_VERIFY_TIMEOUT": "verify_timeout",
    "RELAY_WALLET_WATERMARK": "wallet_watermark",
    "RELAY_WALLET_HORIZON": "wallet_horizon",
    "RELAY_WALLET_PREEMPT_CONFIDENCE": "wallet_preempt_confidence",
    "RELAY_WALLET_INTERVAL": "wallet_interval",
    "RELAY_WALLET_DEFAULT_FOLDERS": "wallet_default_folders",
    "RELAY_PIPELINE_LEASE": "pipeline_lease",
    "RELAY_PIPELINE_POLL": "pipeline_poll",
    "RELAY_PIPELINE_HEARTBEAT": "pipeline_heartbeat",
    "RELAY_MCP_REQUIRE_APPROVAL": "mcp_require_approval",
    "RELAY_THEME": "gui_theme",
}


def load_config(env: Mapping[str, str] | None = None, **flags: Any) -> Config:
    """Build the config; raise :class:`ConfigError` naming the bad setting."""
    env = os.environ if env is None else env
    home = Path(flags.pop("home", None) or default_home(env))
    values: dict[str, Any] = {"home": home}
    values.update(_read_toml(home / SETTINGS_FILE))
    values.update({field: env[key] for key, field in _ENV_KEYS.items() if env.get(key)})
    values.update({k: v for k, v in flags.items() if v is not None})
    return _validated(values, f"Fix it in {home / SETTINGS_FILE} or the RELAY_* environment.")


def _validated(values: Mapping[str, Any], hint: str) -> Config:
    """``values`` as a :class:`Config`, or a :class:`ConfigError` naming the first bad one."""
    try:
        return Config(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"Invalid setting {where!r}: {first['msg']}.", hint) from exc


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    import tomllib  # only when there is a relay.toml (most data folders have none)

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"Cannot read {path}: {exc}.", "Fix or remove the file.") from exc


def env_overrides(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Setting → the RELAY_* variable that overrides relay.toml for it in ``env``."""
    env = os.environ if env is None else env
    return {field: key for key, field in _ENV_KEYS.items() if env.get(key)}


def read_settings(home: Path) -> dict[str, Any]:
    """What ``home``'s relay.toml sets (nothing when there is none)."""
    return _read_toml(home / SETTINGS_FILE)


def write_settings(home: Path, changes: Mapping[str, Any]) -> Config:
    """Set ``changes`` in ``home``'s relay.toml (a value of None removes the key: the
    default again), keeping the file's comments, layout and other keys.

    The file's settings with the changes are validated as a :class:`Config` first: an
    invalid value raises :class:`ConfigError` naming it, and nothing is written. Values are
    written as the model reads them ("90" for a number of seconds is written as 90.0).
    Returns that config (relay.toml alone: no environment, no flags).
    """
    import tomlkit  # only when settings are written
    from tomlkit.exceptions import TOMLKitError

    path = home / SETTINGS_FILE
    try:
        doc = tomlkit.parse(path.read_text(encoding="utf-8")) if path.exists() \
            else tomlkit.document()
    except (OSError, UnicodeDecodeError, TOMLKitError) as exc:
        raise ConfigError(f"Cannot read {path}: {exc}.", "Fix or remove the file.") from exc
    values: dict[str, Any] = {**doc.unwrap(), **changes}
    values = {"home": home, **{k: v for k, v in values.items() if v is not None}}
    config = _validated(values, "Nothing was saved; change the value and save again.")
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = getattr(config, key)
    tmp = path.with_name(f".{SETTINGS_FILE}.tmp")
    try:
        home.mkdir(parents=True, exist_ok=True)
        tmp.write_text(tomlkit.dumps(doc), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise ConfigError(f"Cannot write {path}: {exc}.",
                          "Check that the data folder is writable.") from exc
    return config
