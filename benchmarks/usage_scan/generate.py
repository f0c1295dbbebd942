"""Seeded generator of realistic Claude Code transcripts (benchmarks/usage_scan, issue 5).

Writes ``<out>/projects/<encoded cwd>/<session id>.jsonl`` (and, for sessions that
spawned an agent, ``<session id>/subagents/agent-<id>.jsonl`` + ``.meta.json``) until the
files add up to the requested size. The lines are shaped like the recorded transcripts
in ``shared/fixtures/claude/captures/*/config/projects`` (NOTES.md §9), field for field
and in the same key order:

* ``queue-operation`` (print-mode sessions), ``user`` prompts, ``attachment`` lines
  (agent/skill listings), ``mode`` on a resume, ``last-prompt`` at the end;
* ``assistant`` lines with ``message.id`` / ``requestId`` / ``model`` / ``usage``, where
  **each content block** (thinking, text, tool_use) **is its own line repeating the same
  usage** — the streaming duplicates a usage reader must count once;
* ``user`` tool_result lines carrying most of the bytes: the tool's output twice, in
  ``message.content`` and in ``toolUseResult``, as Claude Code writes it (Read, Bash,
  Grep, Edit, Write, Task); at 200 MB and more a few outputs are several MB long;
* API errors as ``<synthetic>`` assistant lines with zero usage, then the retry;
* sessions that span days (a resume after 20–50 h), forks that copy the start of an
  earlier session with the same message ids (cross-file duplicates), subagent files;
* 30 days of timestamps (2026-11-01 → 2026-11-30 UTC), 40 projects of unequal weight,
  several models (claude-opus-4-8, claude-sonnet-5, claude-haiku-4-5, claude-sonnet-4-6).

``cache_creation_input_tokens`` always equals ``ephemeral_5m + ephemeral_1h`` as the API
writes it (ccusage counts the 5m/1h buckets when present, the flat field otherwise).

Oddities (on by default, ``oddities=False`` turns them off): ~1 % of the files end in a
truncated line (the CLI died mid-write), ~1 % hold a corrupt line followed by good ones
(a torn write, then the session went on) and a blank line. Readers must skip both; the
truncated assistant line and the corrupt line carry no countable usage for anyone.

``append(out, mb, seed)`` appends ~``mb`` MiB of new turns to existing, cleanly ended
files (the refresh measurement); ``restore(appended)`` truncates them back.

Run: ``python -m benchmarks.usage_scan.generate --out DIR [--size-mb 1024] [--seed 5]``.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

#: bump when the output for a given (seed, size) changes: cached data sets are rebuilt
GENERATOR_VERSION = 1
MIB = 1 << 20
START_MS = 1_793_491_200_000  # 2026-11-01T00:00:00Z
DAYS = 30
END_MS = START_MS + DAYS * 86_400_000
CLI_VERSION = "2.1.197"
MODELS = (("claude-opus-4-8", 45), ("claude-sonnet-5", 35), ("claude-haiku-4-5", 12),
          ("claude-sonnet-4-6", 8))
MANIFEST = "bench-manifest.json"

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
_PROJECT_NAMES = (
    "relay", "api-gateway", "billing-service", "web-frontend", "mobile-app", "data-pipeline",
    "ml-training", "infra-terraform", "docs-site", "auth-service", "search-indexer", "payments",
    "notification-hub", "analytics-dashboard", "cli-tools", "shared-libs", "design-system", "etl-jobs",
    "reporting", "customer-portal", "admin-console", "feature-flags", "rate-limiter", "log-shipper",
    "image-resizer", "pdf-renderer", "chat-backend", "video-transcoder", "geo-service", "inventory",
    "orders", "shipping", "pricing-engine", "recommendations", "ab-testing", "crawler", "scheduler",
    "secrets-manager", "backup-tool", "mail-relay",
)
_PROMPTS = (
    "Fix the failing test in {f}", "Refactor {f} to use the new session API",
    "Why does {f} leak file handles?", "Add retries with backoff to {f}",
    "Write tests for {f}", "Explain what {f} does and simplify it",
    "Profile {f} and make it faster", "Rename the config keys in {f} and update callers",
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


def encode_cwd(cwd: str) -> str:
    """Claude Code's project folder name: every character outside [A-Za-z0-9] becomes '-'."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)


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


@dataclass
class FileInfo:
    path: str  # relative to out
    session_id: str
    cwd: str
    clean_end: bool
    last_ms: int


@dataclass
class Appended:
    """What ``append`` did: the files it grew (with their previous sizes) and the bytes added."""

    out: Path
    bytes: int = 0
    lines: int = 0
    usage_messages: int = 0
    files: list[tuple[str, int]] = field(default_factory=list)


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


def generate(out: Path, size_mb: float = 1024, seed: int = 5, *, oddities: bool = True) -> GenStats:
    """Write the data set under ``out`` (which must not hold one already)."""
    target = int(size_mb * MIB)
    g = _Gen(seed, big_lines=size_mb >= 200, oddities=oddities)
    rng = g.rng
    projects = []
    for i, name in enumerate(_PROJECT_NAMES):
        cwd = f"/home/dev/{'work' if i % 3 else 'src'}/{name}"
        projects.append((cwd, _project_files(rng), 1.0 / (i + 1) ** 0.8))
    weights = [p[2] for p in projects]
    root = out / "projects"
    root.mkdir(parents=True, exist_ok=True)
    manifest: list[FileInfo] = []
    previous: dict[str, _Session] = {}
    total = 0
    while total < target:
        cwd, files, _ = rng.choices(projects, weights)[0]
        # sessions start in working hours over the 30 days, and end inside them
        day = rng.randrange(DAYS)
        start = START_MS + day * 86_400_000 + rng.randint(7 * 3600, 22 * 3600) * 1000
        spans = rng.random() < 0.1
        if spans:
            start = min(start, END_MS - 4 * 86_400_000)
        sid = g.uuid()
        s = _Session(g, sid, cwd, start, sdk=rng.random() < 0.3)
        g.stats.sessions += 1
        parent = previous.get(cwd)
        if parent is not None and rng.random() < 0.05 and len(parent.lines) > 10:
            # a fork: copies of the parent's first lines, same message ids, original timestamps
            k = rng.randint(len(parent.lines) // 3, len(parent.lines) - 2)
            old, new = parent.sid.encode(), sid.encode()
            s.lines = [line.replace(old, new) for line in parent.lines[:k]
                       if not line.startswith(b'{"type":"last-prompt"')]
            s.ts = max(parent.ts, start)
            s.parent = g.uuid()
            s.emit({"type": "mode", "mode": "normal", "sessionId": sid})
            g.stats.forks += 1
        text = rng.choice(_PROMPTS).format(f=rng.choice(files))
        if s.sdk:
            s.queue_ops(text)
        n_turns = min(int(rng.expovariate(1 / 4)) + 1, 25)
        for t in range(n_turns):
            if t == 0:
                s.prompt(text)
                s.attachments()
                for _ in range(min(int(rng.expovariate(1 / 6)) + 1, 40)):
                    s.tool_step(files)
                s.final()
                continue
            if spans and t == n_turns // 2:
                s.resume(rng.randint(20, 50) * 3_600_000)
            s.ts += rng.randint(30_000, 1_800_000)
            text = rng.choice(_PROMPTS).format(f=rng.choice(files))
            s.turn(text, files)
        s.last_prompt(text)
        s.ts = min(s.ts, END_MS - 1)  # (the manifest's last_ms; lines may run past END_MS)
        lines = s.lines
        clean = True
        if oddities and rng.random() < 0.01 and len(lines) > 8:
            # a torn write, then the session went on: a corrupt line and a blank line
            i = rng.randrange(2, len(lines) - 2)
            lines.insert(i, lines[i][: len(lines[i]) // 3] + b"\x00\x00\x00\n")
            lines.insert(i + 1, b"\n")
            g.stats.corrupt_lines += 1
        if oddities and rng.random() < 0.01 and len(lines) > 8:
            # the CLI died mid-write: the file ends inside a line
            i = rng.randrange(len(lines) // 2, len(lines))
            lines = [*lines[:i], lines[i][: max(1, len(lines[i]) // 2)]]
            clean = False
            g.stats.truncated_files += 1
        folder = root / encode_cwd(cwd)
        folder.mkdir(exist_ok=True)
        path = folder / f"{sid}.jsonl"
        data = b"".join(lines)
        path.write_bytes(data)
        total += len(data)
        g.stats.files += 1
        manifest.append(FileInfo(str(path.relative_to(out)), sid, cwd, clean, s.ts))
        for sub in s.subagents:
            sub_dir = folder / sid / "subagents"
            sub_dir.mkdir(parents=True, exist_ok=True)
            sub_data = b"".join(sub.lines)
            (sub_dir / f"agent-{sub.agent}.jsonl").write_bytes(sub_data)
            (sub_dir / f"agent-{sub.agent}.meta.json").write_text(json.dumps(
                {"agentType": "general-purpose", "description": "Survey the module",
                 "toolUseId": "toolu_01" + g.b62(22), "spawnDepth": 1}))
            total += len(sub_data)
            g.stats.files += 1
            g.stats.subagent_files += 1
        s.subagents = []
        previous[cwd] = s
    g.stats.bytes = total
    (out / MANIFEST).write_text(json.dumps({
        "generator": GENERATOR_VERSION, "seed": seed, "size_mb": size_mb, "oddities": oddities,
        "stats": asdict(g.stats), "files": [asdict(f) for f in manifest]}))
    return g.stats


def append(out: Path, mb: float = 1.0, seed: int = 5) -> Appended:
    """Append ~``mb`` MiB of new turns to a few cleanly ended session files under ``out``."""
    manifest = json.loads((out / MANIFEST).read_text())
    files = [FileInfo(**f) for f in manifest["files"] if f["clean_end"]]
    g = _Gen(seed * 1_000_003 + 17, big_lines=False, oddities=False)
    rng = g.rng
    done = Appended(out)
    target = int(mb * MIB)
    # the most recent sessions are the ones still being written to
    files.sort(key=lambda f: f.last_ms)
    live = files[-12:]
    usage_before = g.stats.usage_messages
    while done.bytes < target:
        info = rng.choice(live)
        path = out / info.path
        s = _Session(g, info.session_id, info.cwd, min(info.last_ms, END_MS - 3_600_000), sdk=False)
        s.turn(rng.choice(_PROMPTS).format(f="src/app.py"), ["src/app.py", "tests/test_app.py"])
        data = b"".join(s.lines)
        if done.bytes + len(data) > target * 1.5 and done.bytes > 0:
            continue  # one huge result would overshoot: draw another turn
        size = path.stat().st_size
        if not any(p == info.path for p, _ in done.files):
            done.files.append((info.path, size))
        with path.open("ab") as fh:
            fh.write(data)
        done.bytes += len(data)
        done.lines += len(s.lines)
    done.usage_messages = g.stats.usage_messages - usage_before
    return done


def restore(appended: Appended) -> None:
    """Undo ``append``: truncate every grown file back to its previous size."""
    for rel, size in appended.files:
        with (appended.out / rel).open("r+b") as fh:
            fh.truncate(size)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--size-mb", type=float, default=1024)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--no-oddities", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    stats = generate(args.out, args.size_mb, args.seed, oddities=not args.no_oddities)
    print(json.dumps(asdict(stats), indent=1))
    print(f"written in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
