"""The line builders of benchmarks/usage_scan's transcript generator (``generate.py``).

``_Gen`` is one generator's state: the seeded random stream, the text corpus tool
outputs are sliced from and the running ``GenStats``. ``_Session`` builds one session's
lines in memory, each kind field for field and in the key order Claude Code writes it
(the shapes are listed in ``generate.py``'s docstring); ``generate.py`` lays the
sessions out in files, adds the oddities and keeps the manifest.

Anything changed here changes the output for a given (seed, size): bump
``generate.GENERATOR_VERSION`` so cached data sets are rebuilt.
"""

from __future__ import annotations

import base64
import json
import random
import time
from dataclasses import dataclass
from typing import Any

import orjson

MIB = 1 << 20
CLI_VERSION = "2.1.197"
MODELS = (("claude-opus-4-8", 45), ("claude-sonnet-5", 35), ("claude-haiku-4-5", 12),
          ("claude-sonnet-4-6", 8))

_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_WORDS = (
    "def", "class", "return", "import", "from", "self", "None", "True", "False", "async", "await",
    "yield", "lambda", "request", "response", "payload", "handler", "config", "session", "token",
    "usage", "index", "offset", "cursor", "buffer", "stream", "parser", "reader", "writer", "window",
    "budget", "account", "model", "price", "forecast", "const", "let", "function", "export",
    "interface", "type", "extends", "string", "number", "boolean", "Promise", "if", "else", "for",
    "while", "try", "except", "finally", "raise", "with", "as", "in", "not", "and", "or", "is", "user",
    "assistant", "message", "content", "tool", "result", "error", "warning", "info", "debug", "résumé",
    "naïve", "café", "—", "…", "✓", "✗", "日本語", "données", "größe",
)
_AGENT_LISTING = json.loads(
    '{"type":"agent_listing_delta","addedTypes":["claude","Explore","general-purpose","Plan",'
    '"statusline-setup"],"addedLines":["- claude: Catch-all for any task that doesn\'t fit a more '
    'specific agent. (Tools: *)","- Explore: Read-only search agent for broad fan-out searches — when '
    'answering means sweeping many files, directories, or naming conventions and you only need the '
    'conclusion, not the file dumps. (Tools: All tools except Agent, Edit, Write, NotebookEdit)",'
    '"- general-purpose: General-purpose agent for researching complex questions, searching for code, '
    'and executing multi-step tasks. (Tools: *)","- Plan: Software architect agent for designing '
    'implementation plans. (Tools: All tools except Agent, Edit, Write, NotebookEdit)",'
    '"- statusline-setup: Use this agent to configure the user\'s Claude Code status line setting. '
    '(Tools: Read, Edit)"],"removedTypes":[],"isInitial":true,"showConcurrencyNote":true}'
)
_SKILLS = ("deep-research", "update-config", "keybindings-help", "verify", "code-review", "simplify",
           "fewer-permission-prompts", "loop", "claude-api", "run", "init", "review", "security-review")


def iso(ms: int) -> str:
    """``2026-11-30T10:05:15.966Z`` (the transcripts' timestamp form)."""
    t = time.gmtime(ms // 1000)
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:"
            f"{t.tm_sec:02d}.{ms % 1000:03d}Z")


@dataclass
class GenStats:
    files: int = 0
    subagent_files: int = 0
    sessions: int = 0
    forks: int = 0
    lines: int = 0
    bytes: int = 0
    tool_result_bytes: int = 0
    assistant_lines: int = 0
    #: distinct (message.id, requestId) pairs with usage, counting fork copies once
    usage_messages: int = 0
    synthetic_errors: int = 0
    truncated_files: int = 0
    corrupt_lines: int = 0
    multi_mb_lines: int = 0


class _Gen:
    """One generator state: the random stream, the text corpus and the running totals."""

    def __init__(self, seed: int, *, big_lines: bool, oddities: bool) -> None:
        self.rng = random.Random(seed)
        self.big_lines = big_lines
        self.oddities = oddities
        self.stats = GenStats()
        self.corpus = self._corpus()
        self.models = [m for m, _ in MODELS]
        self.model_weights = [w for _, w in MODELS]

    # ---- ids and text -------------------------------------------------------------------
    def uuid(self) -> str:
        h = f"{self.rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"

    def b62(self, n: int) -> str:
        r = self.rng.getrandbits
        return "".join(_ALNUM[r(6) % 62] for _ in range(n))

    def signature(self, n: int) -> str:
        return base64.b64encode(self.rng.randbytes(n)).decode()

    def _corpus(self) -> str:
        """~2.5 MB of source-and-log-like text that tool outputs are sliced from."""
        rng, words = self.rng, _WORDS
        lines = []
        n = 0
        while n < 2_500_000:
            indent = " " * (4 * rng.randint(0, 4))
            k = rng.randint(2, 14)
            line = indent + " ".join(rng.choice(words) for _ in range(k))
            if rng.random() < 0.15:
                line += f'("{rng.choice(words)}", {rng.randint(0, 9999)})'
            if rng.random() < 0.05:
                line += '\t# "quoted" \\ path\\to\\file'
            lines.append(line)
            n += len(line) + 1
        return "\n".join(lines)

    def text(self, n: int) -> str:
        """About n characters of corpus text, starting and ending on a line boundary."""
        corpus = self.corpus
        if n >= len(corpus) - 1:
            reps = n // len(corpus) + 1
            return ("\n".join([corpus] * reps))[:n]
        start = self.rng.randrange(0, len(corpus) - n)
        nl = corpus.find("\n", start)
        start = nl + 1 if 0 <= nl < start + 200 else start
        chunk = corpus[start:start + n]
        cut = chunk.rfind("\n")
        return chunk[:cut] if cut > n // 2 else chunk

    def result_size(self) -> int:
        """A tool output's length: heavy-tailed (median ~2.5 KB, mean ~6 KB, rare MB-long)."""
        rng = self.rng
        if self.big_lines and rng.random() < 0.0001:
            self.stats.multi_mb_lines += 1
            return rng.randint(2 * MIB, 6 * MIB)
        return min(int(rng.lognormvariate(7.8, 1.2)), 900_000)


class _Session:
    """Builds one session's lines (bytes, newline-terminated) in memory."""

    def __init__(self, g: _Gen, session_id: str, cwd: str, start_ms: int, *, sdk: bool,
                 sidechain_agent: str | None = None) -> None:
        self.g = g
        self.sid = session_id
        self.cwd = cwd
        self.ts = start_ms
        self.sdk = sdk
        self.agent = sidechain_agent
        self.parent: str | None = None
        self.lines: list[bytes] = []
        self.context = g.rng.randint(12_000, 30_000)  # tokens in the prompt cache
        self.one_hour_cache = g.rng.random() < 0.4
        self.model = g.rng.choices(g.models, g.model_weights)[0]
        self.prompt_id = g.uuid()
        self.subagents: list[_Session] = []

    # ---- helpers -------------------------------------------------------------------------
    def tick(self, lo: int, hi: int) -> str:
        self.ts += self.g.rng.randint(lo, hi)
        return iso(self.ts)

    def common(self, uuid: str) -> dict[str, Any]:
        d: dict[str, Any] = {"uuid": uuid, "timestamp": iso(self.ts), "userType": "external",
                             "entrypoint": "sdk-cli" if self.sdk else "cli", "cwd": self.cwd,
                             "sessionId": self.sid, "version": CLI_VERSION, "gitBranch": "main"}
        return d

    def head(self) -> dict[str, Any]:
        d: dict[str, Any] = {"parentUuid": self.parent, "isSidechain": self.agent is not None}
        if self.agent is not None:
            d["agentId"] = self.agent
        return d

    def emit(self, obj: dict[str, Any]) -> int:
        line = orjson.dumps(obj) + b"\n"
        self.lines.append(line)
        self.g.stats.lines += 1
        return len(line)

    # ---- line kinds ----------------------------------------------------------------------
    def queue_ops(self, prompt: str) -> None:
        ts = iso(self.ts)
        self.emit({"type": "queue-operation", "operation": "enqueue", "timestamp": ts,
                   "sessionId": self.sid, "content": prompt})
        self.emit({"type": "queue-operation", "operation": "dequeue", "timestamp": ts,
                   "sessionId": self.sid})

    def prompt(self, text: str) -> None:
        self.tick(200, 4000)
        uuid = self.g.uuid()
        self.prompt_id = self.g.uuid()
        obj = self.head()
        obj.update({"promptId": self.prompt_id, "type": "user",
                    "message": {"role": "user", "content": text}})
        obj.update(self.common(uuid))
        obj.update({"permissionMode": "default"})
        if self.sdk:
            obj["promptSource"] = "sdk"
        self.emit(obj)
        self.parent = uuid

    def attachments(self) -> None:
        g = self.g
        for attachment in (
            _AGENT_LISTING,
            {"type": "skill_listing",
             "content": "\n".join(f"- {s}: {g.text(g.rng.randint(150, 600))}" for s in _SKILLS),
             "skillCount": len(_SKILLS), "isInitial": True, "names": list(_SKILLS)},
        ):
            uuid = g.uuid()
            obj = self.head()
            obj.update({"attachment": attachment, "type": "attachment"})
            obj.update(self.common(uuid))
            self.emit(obj)
            self.parent = uuid

    def usage(self, output_tokens: int, new_tokens: int) -> dict[str, Any]:
        rng = self.g.rng
        write = new_tokens + rng.randint(0, 400)
        read = self.context
        self.context += write
        if self.context > 170_000:  # auto-compact: the cache starts over
            self.context = rng.randint(15_000, 40_000)
        one_h, five_m = (write, 0) if self.one_hour_cache else (0, write)
        return {"input_tokens": rng.randint(1, 12), "cache_creation_input_tokens": write,
                "cache_read_input_tokens": read, "output_tokens": output_tokens,
                "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                "service_tier": "standard",
                "cache_creation": {"ephemeral_1h_input_tokens": one_h, "ephemeral_5m_input_tokens": five_m},
                "inference_geo": "", "iterations": [], "speed": "standard"}

    def assistant(self, blocks: list[dict[str, Any]], new_tokens: int) -> list[str]:
        """One API message: each content block its own line, all with the same usage."""
        g = self.g
        self.tick(800, 30_000)
        msg_id = "msg_01" + g.b62(22)
        req_id = "req_011C" + g.b62(20)
        has_tool = any(b["type"] == "tool_use" for b in blocks)
        usage = self.usage(g.rng.randint(20, 2500), new_tokens)
        model = "claude-haiku-4-5" if self.agent is not None and g.rng.random() < 0.5 else self.model
        uuids = []
        for block in blocks:
            uuid = g.uuid()
            obj = self.head()
            obj["message"] = {"id": msg_id, "type": "message", "role": "assistant", "model": model,
                              "content": [block], "stop_reason": "tool_use" if has_tool else "end_turn",
                              "stop_sequence": None, "usage": usage, "stop_details": None}
            obj["requestId"] = req_id
            obj["type"] = "assistant"
            obj.update(self.common(uuid))
            self.emit(obj)
            self.parent = uuid
            uuids.append(uuid)
            self.ts += g.rng.randint(2, 40)
            g.stats.assistant_lines += 1
        g.stats.usage_messages += 1
        return uuids

    def api_error(self) -> None:
        g = self.g
        self.tick(500, 5000)
        uuid = g.uuid()
        obj = self.head()
        obj["message"] = {"id": "msg_" + g.uuid(), "container": None, "model": "<synthetic>",
                          "role": "assistant", "stop_reason": "stop_sequence", "stop_sequence": "",
                          "type": "message",
                          "usage": {"input_tokens": 0, "output_tokens": 0,
                                    "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                                    "server_tool_use": {"web_search_requests": 0,
                                                        "web_fetch_requests": 0},
                                    "service_tier": None, "cache_creation": None},
                          "content": [{"type": "text", "text": "API Error: 529 Overloaded"}]}
        obj["type"] = "assistant"
        obj.update(self.common(uuid))
        obj.update({"isApiErrorMessage": True, "error": "overloaded", "apiErrorStatus": 529})
        self.emit(obj)
        self.parent = uuid
        g.stats.synthetic_errors += 1

    def tool_step(self, project_files: list[str]) -> None:
        g = self.g
        rng = g.rng
        blocks: list[dict[str, Any]] = []
        if rng.random() < 0.35:
            blocks.append({"type": "thinking", "thinking": g.text(rng.randint(80, 1500)),
                           "signature": g.signature(rng.randint(150, 450))})
        if rng.random() < 0.5:
            blocks.append({"type": "text", "text": g.text(rng.randint(30, 400))})
        n_tools = 2 if rng.random() < 0.15 else 1
        calls = []
        for _ in range(n_tools):
            tool = rng.choices(("Read", "Bash", "Grep", "Edit", "Write", "Task"),
                               (40, 25, 12, 14, 5, 1 if self.agent is None else 0))[0]
            tid = "toolu_01" + g.b62(22)
            f = f"{self.cwd}/{rng.choice(project_files)}"
            tool_input: dict[str, Any]
            if tool == "Read":
                tool_input = {"file_path": f}
            elif tool == "Bash":
                tool_input = {"command": f"pytest -q {f} 2>&1 | tail -200", "description": "Run the tests"}
            elif tool == "Grep":
                tool_input = {"pattern": rng.choice(_WORDS), "path": self.cwd, "output_mode": "content"}
            elif tool == "Edit":
                tool_input = {"file_path": f, "old_string": g.text(rng.randint(40, 600)),
                              "new_string": g.text(rng.randint(40, 800)), "replace_all": False}
            elif tool == "Write":
                tool_input = {"file_path": f, "content": g.text(rng.randint(200, 6000))}
            else:
                tool_input = {"description": "Survey the module", "prompt": g.text(rng.randint(100, 600)),
                              "subagent_type": "general-purpose"}
            blocks.append({"type": "tool_use", "id": tid, "name": tool, "input": tool_input})
            calls.append((tid, tool, f))
        sizes = [g.result_size() for _ in calls]
        uuids = self.assistant(blocks, new_tokens=sum(sizes) // 4)
        tool_uuid = uuids[-1]
        for (tid, tool, f), size in zip(calls, sizes, strict=True):
            self.tool_result(tid, tool, f, size, tool_uuid)

    def tool_result(self, tid: str, tool: str, f: str, size: int, tool_uuid: str) -> None:
        g = self.g
        self.tick(50, 20_000)
        out = g.text(size)
        result: Any
        content: str = out
        if tool == "Read":
            n = out.count("\n") + 1
            result = {"type": "text", "file": {"filePath": f, "content": out, "numLines": n,
                                               "startLine": 1, "totalLines": n}}
        elif tool == "Bash":
            result = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False,
                      "noOutputExpected": False}
        elif tool == "Grep":
            result = {"mode": "content", "numFiles": out.count("\n") // 7 + 1, "filenames": [],
                      "content": out, "numLines": out.count("\n") + 1}
        elif tool == "Edit":
            content = f"The file {f} has been updated successfully."
            result = {"filePath": f, "oldString": out[: len(out) // 2], "newString": out[len(out) // 2:],
                      "originalFile": out, "structuredPatch": [], "userModified": False,
                      "replaceAll": False}
        elif tool == "Write":
            content = f"File created successfully at: {f}"
            result = {"type": "create", "filePath": f, "content": out, "structuredPatch": [],
                      "originalFile": None, "userModified": False}
        else:  # Task: a subagent did the work in its own file
            agent_id = "a" + f"{g.rng.getrandbits(64):016x}"[:16]
            sub = _Session(g, self.sid, self.cwd, self.ts, sdk=self.sdk, sidechain_agent=agent_id)
            sub.model = self.model
            sub.prompt(g.text(200))
            for _ in range(g.rng.randint(2, 8)):
                sub.tool_step([f.rsplit("/", 1)[-1]])
            sub.final()
            self.subagents.append(sub)
            took = sub.ts - self.ts
            self.ts = max(self.ts, sub.ts)
            content = out[:4000]
            result = {"status": "completed", "prompt": "Survey the module", "agentId": agent_id,
                      "content": [{"type": "text", "text": content}], "totalDurationMs": took,
                      "totalTokens": sub.context, "totalToolUseCount": len(sub.lines) // 3}
        uuid = g.uuid()
        obj = self.head()
        obj.update({"promptId": self.prompt_id, "type": "user",
                    "message": {"role": "user", "content": [{"tool_use_id": tid, "type": "tool_result",
                                                             "content": content, "is_error": False}]}})
        obj.update(self.common(uuid))
        obj.update({"toolUseResult": result, "sourceToolAssistantUUID": tool_uuid})
        g.stats.tool_result_bytes += self.emit(obj)
        self.parent = uuid

    def final(self) -> None:
        g = self.g
        blocks: list[dict[str, Any]] = []
        if g.rng.random() < 0.3:
            blocks.append({"type": "thinking", "thinking": g.text(g.rng.randint(80, 800)),
                           "signature": g.signature(220)})
        blocks.append({"type": "text", "text": g.text(g.rng.randint(60, 1500))})
        self.assistant(blocks, new_tokens=g.rng.randint(50, 800))

    def turn(self, text: str, project_files: list[str]) -> None:
        g = self.g
        self.prompt(text)
        for _ in range(min(int(g.rng.expovariate(1 / 6)) + 1, 40)):
            if g.rng.random() < 0.01:
                self.api_error()
            self.tool_step(project_files)
        self.final()

    def last_prompt(self, text: str) -> None:
        self.emit({"type": "last-prompt", "lastPrompt": text, "leafUuid": self.parent, "sessionId": self.sid})

    def resume(self, gap_ms: int) -> None:
        self.ts += gap_ms
        self.emit({"type": "mode", "mode": "normal", "sessionId": self.sid})


def _project_files(rng: random.Random) -> list[str]:
    dirs = ("src", "src/core", "src/api", "tests", "lib", "scripts")
    exts = (".py", ".ts", ".go", ".rs", ".md")
    return [f"{rng.choice(dirs)}/{rng.choice(_WORDS).strip('—…✓✗')}_{i}{rng.choice(exts)}"
            for i in range(30)]
