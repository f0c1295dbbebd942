"""A provider-neutral conversation, saved so ``--resume`` continues it.

Each provider module turns these messages into its wire format on every request (the
model APIs are stateless). The file is ``<data folder>/conversations/<runtime>/<id>.json``,
written atomically after every turn; it holds the prompts, answers and tool results,
scrubbed of secrets (a resumed conversation reads ``[REDACTED:…]`` where a key was) — never
an account's key.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from relay.core.errors import ConversationError
from relay.core.fsutil import PRIVATE_FILE, write_atomic
from relay.core.redact import scrub_obj


class ToolUse(BaseModel):
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class Message(BaseModel):
    """``user`` text, an ``assistant`` answer (text and tool calls) or one ``tool`` result."""

    role: Literal["user", "assistant", "tool"]
    text: str = ""
    tool_calls: list[ToolUse] = Field(default_factory=list)
    call_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False


class Conversation(BaseModel):
    id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    runtime: str
    model: str | None = None
    messages: list[Message] = Field(default_factory=list)

    def add(self, message: Message) -> None:
        self.messages.append(message)



def conversations_dir(home: Path, runtime: str) -> Path:
    return home / "conversations" / runtime


def _path(home: Path, runtime: str, conv_id: str) -> Path:
    if not conv_id or "/" in conv_id or conv_id.startswith("."):
        raise ConversationError(f"{conv_id!r} is not a conversation id.",
                                "Resume a session Relay started on this runtime.")
    return conversations_dir(home, runtime) / f"{conv_id}.json"


def load(home: Path, runtime: str, conv_id: str) -> Conversation:
    path = _path(home, runtime, conv_id)
    try:
        return Conversation.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise ConversationError(f"No saved {runtime} conversation {conv_id} in {path.parent}.",
                                "It was started with another data folder, or removed; start "
                                "a new session.") from None
    except (OSError, ValidationError) as exc:
        raise ConversationError(f"The saved conversation {path} cannot be read: {exc}",
                                "Start a new session.") from exc


def save(home: Path, conv: Conversation) -> Path:
    path = _path(home, conv.runtime, conv.id)
    # The saved copy (in the data folder) is scrubbed like everything Relay keeps; the live
    # conversation keeps what the user and the model said until the process ends.
    text = json.dumps(scrub_obj(conv.model_dump(mode="json")), indent=1, ensure_ascii=False)
    write_atomic(path, text.encode("utf-8"), PRIVATE_FILE)
    return path
