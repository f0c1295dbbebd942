"""A model API conversation saved in the data folder is scrubbed like everything Relay keeps."""

from __future__ import annotations

import secrets
from pathlib import Path

from relay.runtimes.http.conversation import Conversation, Message, ToolUse, load, save


def test_the_saved_conversation_holds_no_secret_and_still_loads(tmp_path: Path) -> None:
    key = "ghp_" + secrets.token_hex(18)
    conv = Conversation(runtime="anthropic-api")
    conv.add(Message(role="user", text=f"use the token {key}"))
    conv.add(Message(role="assistant", tool_calls=[
        ToolUse(id="t1", name="run_command", input={"command": f"gh auth login --with-token {key}"})]))
    conv.add(Message(role="tool", call_id="t1", tool_name="run_command", text=f"logged in with {key}"))
    path = save(tmp_path, conv)
    raw = path.read_text()
    assert key not in raw
    assert raw.count("[REDACTED:github_token]") == 3
    back = load(tmp_path, "anthropic-api", conv.id)
    assert [m.role for m in back.messages] == ["user", "assistant", "tool"]
    assert back.messages[1].tool_calls[0].id == "t1"
    assert conv.messages[0].text == f"use the token {key}"  # the live conversation is untouched
