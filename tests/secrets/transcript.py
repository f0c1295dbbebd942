"""The corpus as Claude Code's stream-json output, for the fake ``claude``.

Each record is printed three times, the way Claude Code 2.1.197 prints a turn (the line
shapes are copied from the recorded captures, ``c_bash_tool`` and ``f_usage_limit``): as an
assistant text block (message id ``msg_corpus_<id>``), as a Bash tool call whose command
prints it (call id ``toolu_corpus_<id>``), and as that call's result. The transcript ends the
way a subscriber's session hits its usage limit, so Relay hands the task on and writes a
contract. The fake replays it with ``RELAY_FAKE_CLAUDE_TRANSCRIPT`` (tests/fakes/bin/claude).
"""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

from tests.fakes.replay import capture_dir

#: the run the fake replays around the transcript (its stderr and exit code: a usage limit)
LIMIT_RUN = "f_usage_limit/run1_subscriber_five_hour"
CHANNELS = ("assistant_text", "tool_call", "tool_result")


def _lines(scenario: str) -> list[dict[str, Any]]:
    path = capture_dir("claude", scenario) / "stdout.ndjson"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def command_for(text: str) -> str:
    """The Bash command an agent runs to print ``text``."""
    return f"cat <<'EOF'\n{text}\nEOF"


def build(records: list[dict[str, Any]]) -> str:
    bash = _lines("c_bash_tool/run1")
    limit = _lines(LIMIT_RUN)
    init, call_line, result_line, text_line = bash[0], bash[1], bash[2], bash[5]
    session = limit[0]["session_id"]
    counter = iter(range(1, 10**9))

    def stamp(line: dict[str, Any]) -> dict[str, Any]:
        line = copy.deepcopy(line)
        line["session_id"] = session
        line["uuid"] = str(uuid.UUID(int=next(counter)))
        return line

    out = [stamp(init)]
    for record in records:
        rid, text = record["id"], record["text"]
        said = stamp(text_line)
        said["message"]["id"] = f"msg_corpus_{rid}"
        said["message"]["content"] = [{"type": "text", "text": text}]
        call = stamp(call_line)
        call["message"]["id"] = f"msg_corpus_{rid}_call"
        call["message"]["content"] = [{"type": "tool_use", "id": f"toolu_corpus_{rid}",
                                       "name": "Bash", "input": {
                                           "command": command_for(text),
                                           "description": "Show what was found"}}]
        result = stamp(result_line)
        result["message"]["content"] = [{"tool_use_id": f"toolu_corpus_{rid}",
                                         "type": "tool_result", "content": text,
                                         "is_error": False}]
        result["tool_use_result"] = {**result["tool_use_result"], "stdout": text}
        out += [said, call, result]
    out += [stamp(line) for line in limit[1:]]
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in out)


def write(records: list[dict[str, Any]], path: Path) -> Path:
    path.write_text(build(records), encoding="utf-8")
    return path
