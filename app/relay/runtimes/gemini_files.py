"""Gemini CLI's own files, as the adapter reads them (Relay never writes them).

Facts from Gemini CLI 0.61.0 (``tests/fixtures/gemini/NOTES.md`` and its bundle):

* **Folder.** gemini-cli's ``homedir()`` is ``$GEMINI_CLI_HOME``, else ``$HOME``; its state
  is ``<that>/.gemini`` (:mod:`relay.core.agent_homes`): ``settings.json``, ``projects.json``
  (cwd → project short name) and the chats
  ``tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<first 8 of the id>.jsonl``.
* **Auth type.** Headless validation takes ``security.auth.selectedType`` from the merged
  settings (the workspace's ``<cwd>/.gemini/settings.json`` over the user's; the system
  files must be owned by root and are not read here), else derives one from the
  environment, in this order: ``GOOGLE_GENAI_USE_GCA=true`` → ``oauth-personal``,
  ``GOOGLE_GENAI_USE_VERTEXAI=true`` → ``vertex-ai``, ``GOOGLE_GEMINI_BASE_URL`` set →
  ``gateway``, ``GEMINI_API_KEY`` → ``gemini-api-key``, ``CLOUD_SHELL=true`` /
  ``GEMINI_CLI_USE_COMPUTE_ADC=true`` → ``compute-default-credentials``. Headless mode
  refuses ``gateway`` ("Invalid auth method selected.", exit 41) unless
  ``security.auth.useExternal`` is set — the reason a custom endpoint needs the type pinned.
* **Chats.** JSONL: a header line (``sessionId``, repeated on every resume), message records
  (``type`` ``user`` / ``gemini`` / …, each with an ``id``; a gemini record is written twice
  under one id), ``{"$set": {"messages": [...]}}`` replacing the whole history and
  ``{"$rewindTo": id}``. **After an API failure the failed prompt is rolled back** by a
  ``$set.messages``; a session left with no user prompt or reply is not resumable at all
  (``--resume`` answers "Invalid session identifier", exit 42).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relay.core import jsonvalue
from relay.core.agent_homes import GeminiHome, gemini_home, gemini_workspace_settings

#: the auth types (``AuthType`` in gemini-cli 0.61.0)
API_KEY_AUTH = "gemini-api-key"
GATEWAY_AUTH = "gateway"
#: what pins the auth type in a settings.json (named in errors; Relay never writes it)
AUTH_PIN = '{"security": {"auth": {"selectedType": "gemini-api-key"}}}'
#: sign-ins that do not use ``GEMINI_API_KEY`` at all
KEYLESS_AUTH = frozenset({"oauth-personal", "vertex-ai", "cloud-shell",
                          "compute-default-credentials"})

_HEADER_KEYS = ("sessionId", "projectHash")
_IGNORED_PROMPT = ("/", "?", "<session_context>", "<hook_context>")
_UUID = re.compile(r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f-]{27}$")
#: chats bigger than this are not read for a resume (nothing Relay needs is worth it)
MAX_CHAT_BYTES = 64 * 1024 * 1024


# ---------------------------------------------------------------------------
# Auth
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AuthSetup:
    """How Gemini CLI will sign in, as far as its settings and environment tell.

    Attributes:
        selected: ``security.auth.selectedType`` of the merged settings (None: unset).
        use_external: ``security.auth.useExternal`` (headless then skips its validation).
        effective: What headless mode will use: ``selected``, else the environment's.
        settings_path: The user settings file (where a pin belongs).
    """

    selected: str | None
    use_external: bool
    effective: str | None
    settings_path: Path


def auth_from_env(env: Mapping[str, str]) -> str | None:
    """The auth type gemini-cli derives from the environment (``getAuthTypeFromEnv``)."""
    if env.get("GOOGLE_GENAI_USE_GCA") == "true":
        return "oauth-personal"
    if env.get("GOOGLE_GENAI_USE_VERTEXAI") == "true":
        return "vertex-ai"
    if env.get("GOOGLE_GEMINI_BASE_URL"):
        return GATEWAY_AUTH
    if env.get("GEMINI_API_KEY"):
        return API_KEY_AUTH
    if env.get("CLOUD_SHELL") == "true" or env.get("GEMINI_CLI_USE_COMPUTE_ADC") == "true":
        return "compute-default-credentials"
    return None


def auth_setup(env: Mapping[str, str], cwd: Path) -> AuthSetup | None:
    """How the run will sign in; ``None`` when a settings file cannot be read as JSON
    (it may hold comments, which gemini-cli strips): then only the CLI can tell."""
    user_path = gemini_home(env).settings
    auth: dict[str, Any] = {}
    paths = [user_path]
    workspace = gemini_workspace_settings(cwd)
    if workspace.resolve() != user_path.resolve():  # gemini skips it when cwd is home
        paths.append(workspace)
    for path in paths:
        settings = _json_file(path)
        if settings is None:
            return None
        auth.update(_auth_section(settings))
    selected = auth.get("selectedType")
    selected = selected if isinstance(selected, str) and selected else None
    return AuthSetup(selected=selected, use_external=auth.get("useExternal") is True,
                     effective=selected or auth_from_env(env), settings_path=user_path)


def _json_file(path: Path) -> dict[str, Any] | None:
    """A settings file's object: ``{}`` when it does not exist, None when unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError:
        return None
    try:
        value = jsonvalue.loads(text) if text.strip() else {}
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _auth_section(settings: Mapping[str, Any]) -> dict[str, Any]:
    security = settings.get("security")
    auth = security.get("auth") if isinstance(security, Mapping) else None
    return dict(auth) if isinstance(auth, Mapping) else {}


# ---------------------------------------------------------------------------
# Chats
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChatState:
    """What a session's chat file says, as gemini-cli will load it.

    Attributes:
        resumable: ``--resume`` will find it (it holds a prompt or a reply).
        rolled_back: The text of the last prompt if Gemini rolled it back (its turn
            failed at the API level), else None.
        last_answer: The text of the last reply after the last prompt, if any.
        model: The model of that reply.
    """

    resumable: bool
    rolled_back: str | None = None
    last_answer: str | None = None
    model: str | None = None


def find_chat(gemini_folder: Path, session_id: str) -> Path | None:
    """The chat file of ``session_id`` under ``<.gemini>/tmp/*/chats`` (None if absent)."""
    if not _UUID.match(session_id):
        return None
    pattern = f"*/chats/session-*-{session_id[:8]}.json*"
    for path in sorted(GeminiHome(gemini_folder).tmp.glob(pattern)):
        if _header_id(path) == session_id:
            return path
    return None


def _header_id(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            first = fh.readline(1 << 20)
        header = jsonvalue.loads(first)
    except (OSError, ValueError):
        return None
    found = header.get("sessionId") if isinstance(header, dict) else None
    return found if isinstance(found, str) else None


def read_chat(path: Path) -> ChatState | None:
    """The state of one JSONL chat file (None if it cannot be read)."""
    try:
        if path.stat().st_size > MAX_CHAT_BYTES:
            return None
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return chat_state(_records(lines))


def chat_state(records: list[dict[str, Any]]) -> ChatState:
    """Replay a chat's records the way gemini-cli loads them (pure)."""
    messages: dict[str, dict[str, Any]] = {}
    prompt: tuple[str, str] | None = None  # (id, text) of the last prompt written
    for record in records:
        patch = record.get("$set")
        if isinstance(patch, dict):
            if isinstance(patch.get("messages"), list):
                messages = {str(m["id"]): m for m in patch["messages"]
                            if isinstance(m, dict) and "id" in m}
            continue
        if "$rewindTo" in record:
            messages = _rewound(messages, str(record["$rewindTo"]))
            continue
        if any(key in record for key in _HEADER_KEYS) or "id" not in record:
            continue
        rid = str(record["id"])
        messages[rid] = {**messages.get(rid, {}), **record}
        text = prompt_text(record)
        if text is not None:
            prompt = (rid, text)
    resumable = any(_resumable(m) for m in messages.values())
    rolled_back = prompt[1] if prompt is not None and prompt[0] not in messages else None
    answer, model = _last_answer(list(messages.values()))
    return ChatState(resumable=resumable, rolled_back=rolled_back, last_answer=answer,
                     model=model)


def _records(lines: list[str]) -> list[dict[str, Any]]:
    found = []
    for line in lines:
        try:
            obj = jsonvalue.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            found.append(obj)
    return found


def _rewound(messages: dict[str, dict[str, Any]], rewind_id: str) -> dict[str, dict[str, Any]]:
    ids = list(messages)
    if rewind_id not in messages:
        return {}
    return {i: messages[i] for i in ids[:ids.index(rewind_id)]}


def text_of(content: Any) -> str:
    """A record's content as text: a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content
                       if isinstance(part, dict) and "text" in part)
    return ""


def prompt_text(record: Mapping[str, Any]) -> str | None:
    """The text of a user prompt record (None for tool responses and the CLI's context)."""
    if record.get("type") != "user":
        return None
    text = text_of(record.get("content")).strip()
    return None if not text or text.startswith(_IGNORED_PROMPT) else text


def _resumable(message: Mapping[str, Any]) -> bool:
    """gemini-cli's ``isResumableMessageRecord``."""
    if message.get("type") == "user":
        return prompt_text(message) is not None
    if message.get("type") == "gemini":
        return bool(text_of(message.get("content")).strip() or message.get("toolCalls")
                    or message.get("thoughts"))
    return False


def _last_answer(messages: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """The last reply with text after the last prompt: (text, model)."""
    for message in reversed(messages):
        if prompt_text(message) is not None:
            return None, None
        text = text_of(message.get("content")).strip() if message.get("type") == "gemini" else ""
        if text:
            model = message.get("model")
            return text, model if isinstance(model, str) else None
    return None, None
