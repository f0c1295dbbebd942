"""Seeded generator of realistic Claude Code transcripts (benchmarks/usage_scan, issue 5).

Writes ``<out>/projects/<encoded cwd>/<session id>.jsonl`` (and, for sessions that
spawned an agent, ``<session id>/subagents/agent-<id>.jsonl`` + ``.meta.json``) until the
files add up to the requested size. The lines are shaped like the recorded transcripts
in ``tests/fixtures/claude/captures/*/config/projects`` (NOTES.md §9), field for field
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

The lines themselves are built by ``transcript_lines.py`` (``_Gen``, ``_Session``).

Run: ``python -m benchmarks.usage_scan.generate --out DIR [--size-mb 1024] [--seed 5]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.usage_scan.transcript_lines import MIB as MIB
from benchmarks.usage_scan.transcript_lines import GenStats as GenStats
from benchmarks.usage_scan.transcript_lines import _Gen, _project_files, _Session

#: bump when the output for a given (seed, size) changes: cached data sets are rebuilt
GENERATOR_VERSION = 1
START_MS = 1_793_491_200_000  # 2026-11-01T00:00:00Z
DAYS = 30
END_MS = START_MS + DAYS * 86_400_000
MANIFEST = "bench-manifest.json"

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


def encode_cwd(cwd: str) -> str:
    """Claude Code's project folder name: every character outside [A-Za-z0-9] becomes '-'."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)


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
