"""Settings: defaults → relay.toml in the data folder → RELAY_* environment → flags.

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
from relay.core.home import DB_FILE, WORKTREES_DIR
from relay.core.home import default_home as default_home  # re-exported: callers import it here
from relay.core.models import Delay, Seconds


class Config(BaseModel):
    """Resolved settings for one process."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    home: Path
    inactivity_timeout: Seconds = 900.0
    stop_grace: Seconds = 5.0
    demo_step_delay: Delay = 0.35
    #: the demo's simulated usage limit resets this many seconds after it is hit
    demo_reset_after: Delay = 5 * 3600.0
    #: safe pause: how long to wait for a turn boundary / the end of a tool call
    #: before the agent's process tree is stopped mid-turn.
    pause_timeout: Delay = 60.0
    #: added to a limit's reset time before a waiting session resumes.
    reset_margin: Delay = 30.0
    #: a rate limit whose retry-after is at most this is retried on the same account.
    retry_max_delay: Delay = 60.0
    #: how often one entry is retried after short rate limits / overload before handing off.
    max_retries: int = Field(default=3, ge=0, le=100)
    #: one acceptance command may run this long.
    verify_timeout: Seconds = 900.0
    #: the wallet hands a session off pre-emptively once a window of its account is this
    #: full (0–1), at the next safe point; 1 turns it off.
    wallet_watermark: float = Field(default=0.95, gt=0, le=1)
    #: … or once the forecast says the window runs out within this many seconds.
    wallet_horizon: Delay = 600.0
    #: the least confidence a forecast needs to hand off early: "medium" acts on the
    #: providers' own figures only; "low" also on limits learned from transcripts.
    wallet_preempt_confidence: Literal["high", "medium", "low"] = "medium"
    #: while an agent works, its account is looked at this often (and at every turn end
    #: and official reading); 0 looks only then.
    wallet_interval: Delay = 60.0
    #: also count each CLI's default folder (~/.claude, ~/.codex, …) as the bare provider
    wallet_default_folders: bool = True
    #: a pipeline step's lease: another engine takes the step over this long after its
    #: worker's last heartbeat (heartbeats come every third of it)
    pipeline_lease: Seconds = 30.0
    #: how often an engine with nothing to run looks at a pipeline run again
    pipeline_poll: Seconds = 1.0
    #: how often a worker renews its leases (default: a third of the lease). Longer than
    #: the lease lets other engines take steps over from a live worker — only for tests
    #: and demonstrations of the fence.
    pipeline_heartbeat: Seconds | None = None
    #: an MCP client may start sessions and pipeline runs that run commands (verify) only
    #: when this is false: nobody is there to approve them, so by default they are refused
    mcp_require_approval: bool = True
    #: the window's colours: "system" follows the desktop's light or dark scheme
    gui_theme: Literal["system", "light", "dark"] = "system"

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
    values.update(_read_toml(home / "relay.toml"))
    values.update({field: env[key] for key, field in _ENV_KEYS.items() if env.get(key)})
    values.update({k: v for k, v in flags.items() if v is not None})
    try:
        return Config(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"Invalid setting {where!r}: {first['msg']}.",
                          f"Fix it in {home / 'relay.toml'} or the RELAY_* environment.") from exc


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    import tomllib  # only when there is a relay.toml (most data folders have none)

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"Cannot read {path}: {exc}.", "Fix or remove the file.") from exc
