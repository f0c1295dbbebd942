"""Every error a Relay user can act on.

All of them derive from :class:`RelayError`, whose message says what happened
and what to do. Lower-level errors (OS, subprocess, SQLite, git) are mapped to
these at the boundary with ``raise X from exc``. The CLI prints them without a
traceback and exits non-zero; the GUI shows them in the panel concerned.

Hierarchy::

    RelayError
    ├── ConfigError                 bad relay.toml / environment / flag
    │   └── TaskTooLargeError       a task (or follow-up prompt) over the size limit
    ├── StoreError                  the database cannot be used
    │   └── SchemaTooNewError       written by a newer Relay build
    ├── RuntimeUnavailableError     an agent CLI is missing or unusable
    │   └── CliNotFoundError        executable not on PATH / RELAY_<RT>_BIN
    ├── UnsupportedCapabilityError  a runtime cannot do what was asked
    ├── PolicyRefusedError          the CLI would refuse the permission policy
    ├── AgentProcessError           the agent process misbehaved (spawn failure)
    ├── WorktreeError               git / worktree setup failed
    ├── SessionNotFoundError        no session with that id
    ├── UnknownRuntimeError         no runtime with that name
    ├── AuditError                  the audit log cannot be read or written
    │   └── AuditDamagedError       its last line is damaged: nothing can be appended
    ├── VaultError                  the secrets vault cannot be opened, unlocked or written
    ├── ContractError               a continuation contract cannot be built or read
    │   └── ContractTamperedError   missing or wrong signature: never injected
    ├── HandoffRefusedError         "hand off now" cannot be carried out
    ├── AccountError                an account is unknown or unusable
    ├── SetupError                  an agent CLI's settings cannot be read, merged or written
    ├── PipelineError               a pipeline cannot be read, validated or run
    │   └── PipelineInvalidError    the graph breaks a rule (each problem names node and field)
    └── BoardError                  a board request is wrong (a bad stage, field, repository)
        ├── TaskNotFoundError       no task with that key
        ├── ProjectNotFoundError    no project with that slug
        └── VersionConflictError    the task changed since the version the writer read
"""

from __future__ import annotations


class RelayError(Exception):
    """Base of every error Relay reports to a user.

    Args:
        message: What happened.
        hint: What the user can do about it.
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  → {self.hint}" if self.hint else self.message


class ConfigError(RelayError):
    """A setting is invalid."""


class TaskTooLargeError(ConfigError):
    """A task is larger than Relay takes (:data:`relay.core.models.MAX_TASK_BYTES`)."""


class StoreError(RelayError):
    """The database cannot be opened or written."""


class SchemaTooNewError(StoreError):
    """The database was written by a newer Relay build."""


class RuntimeUnavailableError(RelayError):
    """An agent runtime cannot be used on this machine."""


class CliNotFoundError(RuntimeUnavailableError):
    """An agent CLI's executable was not found."""


class UnsupportedCapabilityError(RelayError):
    """A runtime was asked for something it cannot do."""

    def __init__(self, runtime: str, capability: str, level: str) -> None:
        super().__init__(
            f"{runtime} does not support {capability} (capability level: {level}).",
            "Choose a runtime that supports it (relay-cli doctor lists capabilities).",
        )
        self.runtime = runtime
        self.capability = capability
        self.level = level


class PolicyRefusedError(RelayError):
    """The agent CLI would refuse the chosen permission policy."""


class AgentProcessError(RelayError):
    """The agent process could not be started or driven."""


class AgentStalledError(AgentProcessError):
    """The agent wrote nothing for longer than the inactivity timeout."""


class WorktreeError(RelayError):
    """A git worktree could not be created or used."""


class UnsafeRepositoryError(WorktreeError):
    """A session may not start here: the filesystem root, the temp folder, the home folder or
    Relay's data folder (or a repository whose root is one of them)."""


class ApprovalRequiredError(RelayError):
    """Work an MCP client asked for would run commands that nobody has approved."""


class SessionNotFoundError(RelayError):
    """No session has the given id."""


class MessageNotFoundError(SessionNotFoundError):
    """A session has no message with the given id (relay.sessions.inbox)."""


class MessageRefusedError(RelayError):
    """A message cannot be sent, edited or cancelled now (it is on its way, or was
    delivered; an attachment is not a file the agent may read)."""


class UnknownRuntimeError(RelayError):
    """No runtime has the given name."""


class AuditError(RelayError):
    """The audit log cannot be read or written."""


class AuditDamagedError(AuditError):
    """The audit log's last line is incomplete or unreadable, so the chain cannot be extended."""


class VaultError(RelayError):
    """The secrets vault (OS keyring or encrypted file) cannot be used.

    Its message never contains a secret value.
    """



class VaultLockedError(VaultError):
    """The session needs the vault file's passphrase and the host does not know it yet
    (a client gives it: ``POST /api/v1/vault/unlock``)."""

class ContractError(RelayError):
    """A continuation contract cannot be built, written or read."""


class ContractTamperedError(ContractError):
    """A contract's signature is missing, malformed or does not match its bytes."""


class HandoffRefusedError(RelayError):
    """A "hand off now" request cannot be carried out (nowhere to go, not running…)."""


class AccountError(RelayError):
    """An account is unknown, or its settings are unusable."""


class SetupError(RelayError):
    """An agent CLI's settings file cannot be read, merged or written (``relay-cli setup``)."""


class PipelineError(RelayError):
    """A pipeline file cannot be read, or a run cannot be started, resumed or found."""


class PipelineInvalidError(PipelineError):
    """A pipeline graph breaks a rule; :attr:`problems` lists each with its node and field."""

    def __init__(self, message: str, problems: list[str], hint: str | None = None) -> None:
        detail = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{message}\n{detail}" if problems else message,
                         hint or "Fix the pipeline and validate it again "
                                 "(`relay-cli pipeline validate FILE`).")
        self.problems = problems


class PipelineUntrustedError(PipelineError):
    """A pipeline file runs commands its user has not accepted yet (:attr:`commands`)."""

    def __init__(self, message: str, commands: list[str], hint: str) -> None:
        detail = "\n".join(f"  $ {c}" for c in commands)
        super().__init__(f"{message}\n{detail}" if commands else message, hint)
        self.commands = commands


class DetectNotFoundError(RelayError):
    """No detected session matches what the user named."""


class ConversationError(RelayError):
    """A saved conversation cannot be found or read."""


class HandoffTransitionError(RelayError):
    """A handoff was asked to skip or repeat a step (a Relay bug, never user input)."""


class NoAnswerError(RelayError):
    """The input ended (Ctrl-D) at a prompt: nothing was answered."""


class PromptInterruptedError(RelayError):
    """Ctrl-C at a prompt."""


class HostError(RelayError):
    """The host of a data folder cannot be reached, started or trusted."""


class HostRunningError(HostError):
    """Another process already hosts this data folder."""


class HostGoneError(HostError):
    """The host went away and no process hosts the data folder any more: nothing runs its
    sessions now, so what they wrote is final in the store."""


class BoardError(RelayError):
    """A board request cannot be carried out as asked (a bad stage, field or repository)."""


class TaskNotFoundError(BoardError):
    """No task on the board has that key."""


class ProjectNotFoundError(BoardError):
    """No board project has that slug (or repository)."""


class VersionConflictError(BoardError):
    """A compare-and-set write found the task at another version than expected."""


class ApiError(RelayError):
    """The local API refused a request (a bad token, Host or Origin, a body too big); the
    ``code`` says which."""


def error_code(exc: RelayError | type[RelayError]) -> str:
    """A stable name for the kind of error: ``UnsafeRepositoryError`` → ``unsafe_repository``.

    The one spelling of an error's kind on every wire (the API's and the MCP tools' JSON);
    :func:`error_from_code` turns it back into the same class on the client's side."""
    import re

    cls = exc if isinstance(exc, type) else type(exc)
    name = cls.__name__.removesuffix("Error") or "Relay"
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _subclasses(cls: type[RelayError]) -> list[type[RelayError]]:
    found = [cls]
    for sub in cls.__subclasses__():
        found.extend(_subclasses(sub))
    return found


def error_from_code(code: str, message: str, hint: str | None = None) -> RelayError:
    """The :class:`RelayError` a host reported as ``{"code", "message", "hint"}``, rebuilt as
    the same class (a client catches ``SessionNotFoundError`` as it would in-process); an
    unknown code is a plain :class:`RelayError`."""
    cls = next((c for c in _subclasses(RelayError) if error_code(c) == code), RelayError)
    error = cls.__new__(cls)
    RelayError.__init__(error, message, hint)  # not cls.__init__: some take more arguments
    return error
