"""The continuation contract: what the next agent needs to carry on, signed against tampering.

A handoff writes two files (seed 000): ``envelope.json``, the contract as canonical JSON
with an HMAC-SHA256 ``signature`` made with the vault's signing key, and ``envelope.md``,
its rendering for the next agent. A contract whose signature fails is never injected;
what is injected is :func:`render_markdown` of the *verified* JSON, not the .md file.

**Schema.** Field names are seed 000's. Version 1: contractId, sessionId, taskId, version,
taskGoal, nextAction, doNotRedo, acceptanceAssertions, fileManifest [{path, sha256,
modified}], decisions, constraints, snapshotCommitSHA, signature. Version 2 adds the
session-intent block: initialPrompt, plan, tasksRemaining, skillsLoaded, skillsInUse,
skillsToUse, inFlightCode [{path, snippet}]. A v1 contract has no v2 key at all, so it
serialises byte for byte as before. A v2 contract may add ``instructions`` [{path, sha256,
runtime, how}]: the project instruction files in force for each runtime that ran and how
each reached it (``native``, ``passed_on`` by Relay, or a ``duplicate`` of one it got —
:mod:`relay.sessions.instructions`). The key is written only when the list is not empty,
so a contract from before it existed serialises, and verifies, as before. Likewise a v2
contract of a simulation (the demo) carries ``"simulated": true`` — it was signed with a
throwaway demo key, never the vault's (:mod:`relay.sessions.demo_key`) — and any other
contract has no such key at all. Every other
field is always written (``taskId`` as null when there is none); decisions and
constraints are lists of strings.

**Canonical JSON** (what is signed and what envelope.json holds): UTF-8; object keys
sorted by code point at every level; no whitespace outside strings (separators ``,`` and
``:``); strings as Python's ``json.dumps(ensure_ascii=False)`` writes them (non-ASCII as
raw UTF-8; ``"``, ``\\`` and control characters escaped, the latter as ``\\n``-style or
``\\u00XX``); integers and ``true``/``false``/``null`` only (no floats, NaN or infinity);
no trailing newline. The signature is ``hex(HMAC-SHA256(key, canonical(contract without
its signature key)))``, lowercase, and envelope.json is ``canonical(contract with it)``.
:func:`verify` accepts exactly those bytes: any other byte sequence — even one that
parses to the same object — is refused, so a single changed byte anywhere is refused.

**Secrets.** :func:`sign` takes an optional ``scrub`` hook (``relay.core.redact.scrub_obj``)
applied to the free-text fields before signing. Identifiers, the version, file hashes
and the snapshot commit are not passed to it: they are validated hex or ids, and a
scrubber's generic-token rules could mangle them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    model_serializer,
)

from relay.core import jsonvalue
from relay.core.errors import ContractError, ContractTamperedError
from relay.core.fsutil import PRIVATE_FILE, write_atomic
from relay.sessions.demo_key import DEMO_SIGNED

SCHEMA_VERSION = 2
ENVELOPE_JSON = "envelope.json"
ENVELOPE_MD = "envelope.md"

#: A scrubber: takes a JSON-like value (dicts, lists, strings, …), returns it cleaned.
Scrub = Callable[[Any], Any]

_HEX64 = r"^[0-9a-f]{64}$"
_SIGNATURE = re.compile(_HEX64)
_NOT_SCRUBBED = frozenset({"contractId", "sessionId", "taskId", "version", "snapshotCommitSHA",
                           "fileManifest", "instructions", "signature", "simulated"})


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", validate_by_name=True,
                              validate_by_alias=True, serialize_by_alias=True)


class FileEntry(_Model):
    """A file the next agent should know about, with the hash it had at the snapshot."""

    path: str = Field(min_length=1)
    sha256: str = Field(pattern=_HEX64)
    modified: bool = True


class InFlightCode(_Model):
    """Code the previous agent was in the middle of writing."""

    path: str = Field(min_length=1)
    snippet: str


class InstructionInForce(_Model):
    """A project instruction file in force for one runtime, and how it reached it."""

    path: str = Field(min_length=1)
    sha256: str = Field(pattern=_HEX64)
    runtime: str = Field(min_length=1)
    how: Literal["native", "passed_on", "duplicate"]


class _ContractBase(_Model):
    contract_id: str = Field(alias="contractId", min_length=1)
    session_id: str = Field(alias="sessionId", min_length=1)
    task_id: str | None = Field(default=None, alias="taskId")
    task_goal: str = Field(alias="taskGoal")
    next_action: str = Field(alias="nextAction")
    do_not_redo: list[str] = Field(default_factory=list, alias="doNotRedo")
    acceptance_assertions: list[str] = Field(default_factory=list, alias="acceptanceAssertions")
    file_manifest: list[FileEntry] = Field(default_factory=list, alias="fileManifest")
    decisions: list[str] = Field(default_factory=list)
    constraints: list[str] = Field(default_factory=list)
    snapshot_commit_sha: str = Field(alias="snapshotCommitSHA", pattern=r"^[0-9a-f]{7,64}$")
    signature: str | None = None


class ContractV1(_ContractBase):
    """Schema version 1: goal, next action, do-not-redo, checks, files, decisions."""

    version: Literal[1] = 1


class ContractV2(_ContractBase):
    """Schema version 2: version 1 plus the session-intent block."""

    version: Literal[2] = 2
    initial_prompt: str = Field(default="", alias="initialPrompt")
    plan: list[str] = Field(default_factory=list)
    tasks_remaining: list[str] = Field(default_factory=list, alias="tasksRemaining")
    skills_loaded: list[str] = Field(default_factory=list, alias="skillsLoaded")
    skills_in_use: list[str] = Field(default_factory=list, alias="skillsInUse")
    skills_to_use: list[str] = Field(default_factory=list, alias="skillsToUse")
    in_flight_code: list[InFlightCode] = Field(default_factory=list, alias="inFlightCode")
    instructions: list[InstructionInForce] = Field(default_factory=list)
    #: a simulation's contract, signed with a throwaway demo key (never the vault's)
    simulated: bool = False

    @model_serializer(mode="wrap")
    def _without_empty_instructions(self, handler: SerializerFunctionWrapHandler) -> Any:
        """No ``instructions`` key when there are none, no ``simulated`` key unless it is
        true (contracts from before either existed verify)."""
        data = handler(self)
        if isinstance(data, dict) and not self.instructions:
            data.pop("instructions", None)
        if isinstance(data, dict) and not self.simulated:
            data.pop("simulated", None)
        return data


Contract = ContractV1 | ContractV2
C = TypeVar("C", bound=_ContractBase)
_ANY_CONTRACT: TypeAdapter[Contract] = TypeAdapter(
    Annotated[Contract, Field(discriminator="version")])


def new_contract_id() -> str:
    """A fresh id such as ``c-3f9a1c0b2d4e``."""
    return f"c-{secrets.token_hex(6)}"


# --- canonical JSON, signing, verifying -------------------------------------------------

def canonical_json(obj: Any) -> bytes:
    """``obj`` as canonical JSON bytes (definition in the module docstring)."""
    try:
        text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)
        return text.encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError) as exc:
        raise ContractError(f"The contract cannot be written as canonical JSON: {exc}.") from exc


def _payload(contract: _ContractBase) -> dict[str, Any]:
    return contract.model_dump(mode="json", by_alias=True, exclude={"signature"})


def _mac(key: bytes, payload: dict[str, Any]) -> str:
    if not isinstance(key, bytes) or len(key) < 16:
        raise ContractError("The contract-signing key must be at least 16 bytes.")
    return hmac.new(key, canonical_json(payload), hashlib.sha256).hexdigest()


def sign(contract: C, key: bytes, *, scrub: Scrub | None = None) -> C:
    """A copy of ``contract`` (scrubbed first when ``scrub`` is given) carrying its signature."""
    payload = _payload(contract)
    if scrub is not None:
        payload = _scrubbed(payload, scrub)
        try:
            contract = type(contract).model_validate(payload)
        except ValidationError as exc:
            raise ContractError(f"The scrubbed contract is invalid: {exc.errors()[0]['msg']}.") from exc
        payload = _payload(contract)
    return contract.model_copy(update={"signature": _mac(key, payload)})


def _scrubbed(payload: dict[str, Any], scrub: Scrub) -> dict[str, Any]:
    free = scrub({k: v for k, v in payload.items() if k not in _NOT_SCRUBBED})
    if not isinstance(free, dict):
        raise ContractError("The scrubber did not return a mapping.")
    files = [{**entry, "path": scrub(entry["path"])} for entry in payload["fileManifest"]]
    kept = {k: v for k, v in payload.items() if k in _NOT_SCRUBBED}
    if "instructions" in payload:
        kept["instructions"] = [{**entry, "path": scrub(entry["path"])}
                                for entry in payload["instructions"]]
    return {**free, **kept, "fileManifest": files}


def envelope_bytes(signed: Contract) -> bytes:
    """The exact bytes of envelope.json for a signed contract."""
    if signed.signature is None:
        raise ContractError("The contract is not signed.", "Sign it with relay.sessions.contract.sign.")
    return canonical_json(signed.model_dump(mode="json", by_alias=True))


def verify(envelope_json: bytes, key: bytes) -> Contract:
    """The contract in ``envelope_json`` if, and only if, ``key`` signed exactly these bytes.

    Raises:
        ContractTamperedError: Not canonical JSON, no or a malformed signature, or a
            signature that does not match (compared in constant time).
        ContractError: Correctly signed but not a contract this build reads.
    """
    obj = _parse(envelope_json)
    signature = obj.pop("signature", None)
    if not isinstance(signature, str) or not _SIGNATURE.match(signature):
        raise ContractTamperedError("The contract has no valid signature.",
                                    "It was not written by Relay or was changed: do not use it.")
    try:
        canonical = canonical_json({**obj, "signature": signature})
    except ContractError as exc:
        raise ContractTamperedError(f"The contract is damaged: {exc.message}") from exc
    if canonical != envelope_json:
        raise ContractTamperedError("The contract's bytes are not the ones Relay wrote "
                                    "(not in canonical form).",
                                    "It was edited after signing: do not use it.")
    if not hmac.compare_digest(_mac(key, obj), signature):
        raise ContractTamperedError("The contract's signature does not match its contents.",
                                    "It was changed after signing, or signed with another data "
                                    "folder's key: do not use it.")
    try:
        return _ANY_CONTRACT.validate_python({**obj, "signature": signature})
    except ValidationError as exc:
        raise ContractError(f"The contract is signed but not one this Relay reads "
                            f"({exc.errors()[0]['msg']}).", "Use the Relay build that wrote it.") from exc


def claims_simulation(envelope_json: bytes) -> bool:
    """Whether ``envelope_json`` says it is a simulation's contract (``"simulated": true``),
    looked at *without* verifying it: only to explain why it cannot be verified here."""
    try:
        obj = jsonvalue.loads(envelope_json.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(obj, dict) and obj.get("simulated") is True


def _parse(data: bytes) -> dict[str, Any]:
    def no_constants(name: str) -> Any:
        raise ValueError(f"{name} is not allowed")

    try:
        obj = jsonvalue.loads(data.decode("utf-8"), parse_constant=no_constants)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ContractTamperedError(f"The contract is not valid UTF-8 JSON ({exc}).",
                                    "It was damaged or edited: do not use it.") from exc
    if not isinstance(obj, dict):
        raise ContractTamperedError("The contract is not a JSON object.")
    return obj


# --- envelope files ---------------------------------------------------------------------

def write_envelope(folder: Path, contract: Contract, key: bytes, *,
                   scrub: Scrub | None = None) -> Contract:
    """Sign ``contract`` and write ``folder/envelope.json`` and ``folder/envelope.md``.

    Each file is replaced atomically; the .md is written first, so a complete
    envelope.json always has its rendering beside it. Returns the signed contract.
    """
    signed = sign(contract, key, scrub=scrub)
    data = envelope_bytes(signed)
    try:
        write_atomic(folder / ENVELOPE_MD, render_markdown(signed).encode("utf-8"), PRIVATE_FILE)
        write_atomic(folder / ENVELOPE_JSON, data, PRIVATE_FILE)
    except OSError as exc:
        raise ContractError(f"Cannot write the envelope in {folder}: {exc.strerror}.",
                            "Check the folder's permissions and free space.") from exc
    return signed


def read_envelope(folder: Path, key: bytes) -> Contract:
    """Read and verify ``folder/envelope.json`` (see :func:`verify`)."""
    path = folder / ENVELOPE_JSON
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise ContractError(f"No {ENVELOPE_JSON} in {folder}.") from exc
    except OSError as exc:
        raise ContractError(f"Cannot read {path}: {exc.strerror}.") from exc
    return verify(data, key)


def file_manifest(worktree: Path, paths: Iterable[str | Path], *,
                  modified: bool = True) -> list[FileEntry]:
    """SHA-256 of each file under ``worktree``, sorted by path, each path once.

    Paths may be relative to the worktree or absolute inside it; they are recorded
    relative, with ``/``. Paths that no longer exist are left out (the snapshot commit
    records deletions). A path outside the worktree, or not a regular file, is a
    :class:`ContractError`.
    """
    root = worktree.resolve()
    entries: dict[str, FileEntry] = {}
    for raw in paths:
        target = (root / raw).resolve()
        if not target.is_relative_to(root):
            raise ContractError(f"{raw} is outside the worktree {worktree}.")
        rel = target.relative_to(root).as_posix()
        if not target.exists() or rel in entries:
            continue
        if not target.is_file():
            raise ContractError(f"{rel} in {worktree} is not a regular file.")
        entries[rel] = FileEntry(path=rel, sha256=_sha256(target), modified=modified)
    return [entries[k] for k in sorted(entries)]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
    except OSError as exc:
        raise ContractError(f"Cannot read {path}: {exc.strerror}.") from exc
    return digest.hexdigest()


# --- the next agent's brief -------------------------------------------------------------

#: the task id of a contract that adopts a session found on this machine (detect/adopt.py)
ADOPTED = "adopted"


def render_markdown(contract: Contract) -> str:
    """envelope.md: the brief the next agent reads first (compact, empty sections left out)."""
    c = contract
    where = (f"is in this worktree: the repository at {_code(c.snapshot_commit_sha)} with the "
             "agent's uncommitted changes carried over, not committed" if c.task_id == ADOPTED
             else f"is committed as {_code(c.snapshot_commit_sha)} in this worktree")
    out = [f"# Continuation contract {c.contract_id}", "",
           f"You are taking over a task another agent started. Its work so far {where}; "
           "continue from there.", "",
           f"**Goal:** {_indent(c.task_goal)}", "",
           f"**Next action:** {_indent(c.next_action)}"]
    _section(out, "Do not redo (already done)", _bullets(c.do_not_redo))
    if isinstance(c, ContractV2):
        _render_intent(out, c)
    _section(out, "Acceptance checks (the work is accepted only when all hold)",
             _bullets(c.acceptance_assertions))
    _section(out, "Files at the snapshot", [
        f"- {_code(f.path)} {'modified' if f.modified else 'unchanged'} · sha256 {f.sha256}"
        for f in c.file_manifest])
    if isinstance(c, ContractV2):
        _render_instructions(out, c)
    _section(out, "Decisions already made", _bullets(c.decisions))
    _section(out, "Constraints", _bullets(c.constraints))
    demo = f" · {DEMO_SIGNED}" if isinstance(c, ContractV2) and c.simulated else ""
    out += ["", "---", f"Session {c.session_id} · task {c.task_id or '—'} · snapshot "
            f"{c.snapshot_commit_sha} · contract v{c.version}{demo}"]
    return "\n".join(out) + "\n"


def _render_intent(out: list[str], c: ContractV2) -> None:
    if c.initial_prompt:
        _section(out, "The user's original request",
                 ["> " + line if line else ">" for line in c.initial_prompt.splitlines()])
    remaining = set(c.tasks_remaining)
    plan = [f"- [{' ' if step in remaining else 'x'}] {_indent(step)}" for step in c.plan]
    plan += [f"- [ ] {_indent(task)}" for task in c.tasks_remaining if task not in c.plan]
    _section(out, "Plan ([x] done, [ ] remaining)", plan)
    skills = [f"- {label}: {', '.join(names)}" for label, names in (
        ("loaded", c.skills_loaded), ("in use", c.skills_in_use), ("to use", c.skills_to_use))
        if names]
    _section(out, "Skills", skills)
    code: list[str] = []
    for item in c.in_flight_code:
        fence = "`" * max(3, _longest_run(item.snippet, "`") + 1)
        code += [f"{_code(item.path)}:", fence, item.snippet.rstrip("\n"), fence]
    _section(out, "In-flight code (unfinished when the previous agent stopped)", code)


_HOW = {"native": "read by {runtime} itself", "passed_on": "passed on to {runtime} by Relay",
        "duplicate": "same content as a file {runtime} got, not passed on"}


def _render_instructions(out: list[str], c: ContractV2) -> None:
    _section(out, "Project instruction files in force (follow them too)", [
        f"- {_code(i.path)} {_HOW[i.how].format(runtime=i.runtime)} · sha256 {i.sha256}"
        for i in c.instructions])


def _section(out: list[str], title: str, body: list[str]) -> None:
    if body:
        out += ["", f"## {title}", "", *body]


def _bullets(items: Iterable[str]) -> list[str]:
    return [f"- {_indent(item)}" for item in items]


def _indent(text: str) -> str:
    """Keep a multi-line item inside its list item / paragraph."""
    return "\n  ".join(text.strip().splitlines()) or "—"


def _code(text: str) -> str:
    ticks = "`" * (_longest_run(text, "`") + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _longest_run(text: str, char: str) -> int:
    runs = re.findall(f"{re.escape(char)}+", text)
    return max((len(r) for r in runs), default=0)
