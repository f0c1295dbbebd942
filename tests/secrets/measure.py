"""Push the corpus through ``relay-cli run … --provider claude --json`` and read everything.

The records are split into a few batches; each batch is one real ``relay-cli`` process with
its own data folder, whose fake ``claude`` prints the batch as stream-json
(:mod:`tests.secrets.transcript`: assistant text, a Bash call, its output), hits a usage
limit and hands the task to a fake ``codex`` (so a contract is written). Then every byte of
each data folder is read by boundary (:func:`tests.secrets.scan.boundaries`), with
relay-cli's own stdout and stderr, and ``relay-cli show --json`` / ``contract show``.

* A positive is **caught** at a boundary when none of its secret's forms (raw, JSON-escaped,
  a middle fragment; every line of a multi-line secret) is there.
* A look-alike is **eaten** in a channel when its text is not in the stored event of that
  channel (read from ``relay.db`` through SQLite) verbatim; on stdout, when it is not in the
  printed event.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import FAKES_DIR, make_repo
from tests.secrets import make_corpus, transcript
from tests.secrets.scan import BOUNDARIES, boundaries, forms, sqlite_copy

CLI = [sys.executable, "-m", "relay.cli.main"]
#: issue 20's thresholds, at every boundary
RECALL_MIN = 0.995
FP_MAX = 0.005
BATCHES = 4
PARALLEL = 2
#: where a positive is looked for: the data folder's boundaries and relay-cli's outputs
PLACES = (*BOUNDARIES, "stdout", "stderr", "cli_show")
#: where a look-alike must survive: each channel of the stored events, and relay-cli's stdout
FP_PLACES = (*(f"db:{c}" for c in transcript.CHANNELS), "stdout")


@dataclass
class Result:
    records: list[dict[str, Any]]
    #: record id -> places where its secret was found
    leaks: dict[str, set[str]] = field(default_factory=dict)
    #: record id -> places where its text was lost
    eaten: dict[str, set[str]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def positives(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["kind"] == "positive"]

    @property
    def lookalikes(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["kind"] == "lookalike"]

    def recall(self, place: str | None = None) -> float:
        pos = self.positives
        leaked = [r for r in pos if (place in self.leaks[r["id"]] if place
                                     else self.leaks[r["id"]])]
        return 1 - len(leaked) / len(pos)

    def fp(self, place: str | None = None) -> float:
        look = self.lookalikes
        lost = [r for r in look if (place in self.eaten[r["id"]] if place
                                    else self.eaten[r["id"]])]
        return len(lost) / len(look)


def needles(secret: str) -> list[bytes]:
    """The forms of a secret, and of each line of a multi-line one."""
    parts = [secret] + ([line for line in secret.splitlines() if len(line) >= 16]
                        if "\n" in secret else [])
    return [f for part in parts for f in forms(part, encoded=False)]


def batches(records: list[dict[str, Any]], n: int) -> list[list[dict[str, Any]]]:
    return [records[i::n] for i in range(n)]


def cli_env(home: Path, tmp: Path, transcript_file: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    env.update({
        "RELAY_HOME": str(home), "RELAY_WALLET_DEFAULT_FOLDERS": "0",
        "RELAY_DEMO_STEP_DELAY": "0", "COLUMNS": "160",
        "PATH": f"{FAKES_DIR / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "RELAY_VAULT_PASSPHRASE": "corpus-vault-passphrase",
        "CLAUDE_CONFIG_DIR": str(tmp / "claude-config"),
        "RELAY_FAKE_CLAUDE_SCENARIO": transcript.LIMIT_RUN,
        "RELAY_FAKE_CLAUDE_TRANSCRIPT": str(transcript_file),
        "RELAY_FAKE_CODEX_SCENARIO": "a_text"})
    if os.environ.get("RELAY_FIXTURES"):
        env["RELAY_FIXTURES"] = os.environ["RELAY_FIXTURES"]
    return env


def stored_channels(db: Path) -> dict[str, dict[str, str]]:
    """channel -> record id -> what the store holds for it (read through SQLite)."""
    found: dict[str, dict[str, str]] = {c: {} for c in transcript.CHANNELS}
    with sqlite_copy(db) as conn:
        rows = conn.execute("SELECT kind, payload FROM events").fetchall()
    for kind, payload in rows:
        channel_of(kind, json.loads(payload), found)
    return found


def channel_of(kind: str, event: dict[str, Any], found: dict[str, dict[str, str]]) -> None:
    event = event.get("event", event)  # a payload may wrap the event
    if kind == "assistant_text" and str(event.get("message_id", "")).startswith("msg_corpus_"):
        found[kind][event["message_id"].removeprefix("msg_corpus_")] = event.get("text", "")
    elif kind in ("tool_call", "tool_result") and \
            str(event.get("call_id", "")).startswith("toolu_corpus_"):
        rid = event["call_id"].removeprefix("toolu_corpus_")
        value = json.dumps(event.get("input"), ensure_ascii=False) if kind == "tool_call" \
            else event.get("output", "")
        found[kind][rid] = value if kind == "tool_result" else \
            str((event.get("input") or {}).get("command", value))


def run_batches(work: Path, parts: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Run each batch's relay-cli (``PARALLEL`` at a time); per batch its home and outputs."""
    repo = make_repo(work / "repo")
    runs: list[dict[str, Any]] = []
    pending = list(enumerate(parts))
    active: list[tuple[dict[str, Any], subprocess.Popen[bytes]]] = []
    while pending or active:
        while pending and len(active) < PARALLEL:
            i, part = pending.pop(0)
            folder = work / f"batch{i}"
            folder.mkdir()
            env = cli_env(folder / "relay-home", folder, transcript.write(
                part, folder / "transcript.ndjson"))
            proc = subprocess.Popen(
                [*CLI, "run", "Find the service configuration", "--repo", str(repo),
                 "--provider", "claude", "--provider", "codex", "--json"],
                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)
            active.append(({"records": part, "home": folder / "relay-home", "env": env}, proc))
        meta, proc = active.pop(0)
        out, err = proc.communicate(timeout=300)
        meta.update(stdout=out, stderr=err, returncode=proc.returncode)
        runs.append(meta)
    for meta in runs:
        meta["cli_show"] = shown(meta)
    return runs


def shown(meta: dict[str, Any]) -> bytes:
    """What ``show --json`` and ``contract show`` print for the batch's session."""
    lines = meta["stdout"].decode("utf-8", "replace").splitlines()
    if not lines:
        return b""
    session = json.loads(lines[0])["session_id"]
    out = []
    calls = [["show", session, "--json"]]
    calls += [["contract", "show", str(p.parent)]
              for p in sorted(meta["home"].rglob("envelope.json"))]
    for args in calls:
        proc = subprocess.run([*CLI, *args], env=meta["env"], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=120, check=False)
        out.append(proc.stdout + proc.stderr)
    return b"\n".join(out)


def stdout_channels(stdout: bytes) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {c: {} for c in transcript.CHANNELS}
    for line in stdout.decode("utf-8", "replace").splitlines():
        try:
            event = json.loads(line)["event"]
        except (ValueError, KeyError, TypeError):
            continue
        channel_of(event.get("kind", ""), event, found)
    return found


def measure(work: Path, records: list[dict[str, Any]] | None = None,
            n_batches: int = BATCHES) -> Result:
    records = make_corpus.load() if records is None else records
    result = Result(records, {r["id"]: set() for r in records},
                    {r["id"]: set() for r in records})
    for run in run_batches(work, batches(records, n_batches)):
        if run["returncode"] != 0:
            result.failures.append(f"relay-cli exited {run['returncode']}: "
                                   f"{run['stderr'].decode('utf-8', 'replace')[-2000:]}")
        places = {**boundaries(run["home"]), "stdout": run["stdout"], "stderr": run["stderr"],
                  "cli_show": run["cli_show"]}
        for record in run["records"]:
            if record["kind"] == "positive":
                wanted = needles(record["secret"])
                result.leaks[record["id"]] = {p for p, data in places.items()
                                              if any(n in data for n in wanted)}
        stored = stored_channels(run["home"] / "relay.db")
        printed = stdout_channels(run["stdout"])
        for record in run["records"]:
            if record["kind"] != "lookalike":
                continue
            lost = {f"db:{c}" for c in transcript.CHANNELS
                    if record["text"] not in stored[c].get(record["id"], "")}
            if any(record["text"] not in printed[c].get(record["id"], "")
                   for c in transcript.CHANNELS):
                lost.add("stdout")
            result.eaten[record["id"]] = lost
    return result


# -- the table --------------------------------------------------------------------


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def grouped(records: Iterable[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        out[r[key]].append(r)
    return dict(sorted(out.items()))


def markdown(result: Result) -> str:
    pos, look = result.positives, result.lookalikes
    lines = [f"Corpus: {len(pos)} positives in {len({r['format'] for r in pos})} formats, "
             f"{len(look)} look-alikes in {len({r['category'] for r in look})} categories "
             "(tests/secrets/corpus.jsonl).", "",
             "| where | recall (secrets caught) | secrets found |", "|---|---|---|"]
    lines.append(f"| anywhere | {pct(result.recall())} | "
                 f"{sum(1 for r in pos if result.leaks[r['id']])} |")
    for place in PLACES:
        found = sum(1 for r in pos if place in result.leaks[r["id"]])
        lines.append(f"| {place} | {pct(result.recall(place))} | {found} |")
    lines += ["", "| where | false positives (look-alikes that lost their text) | eaten |",
              "|---|---|---|"]
    for place in FP_PLACES:
        lost = sum(1 for r in look if place in result.eaten[r["id"]])
        lines.append(f"| {place} | {pct(result.fp(place))} | {lost} |")
    lines += ["", "| format | records | recall | leaked at |", "|---|---|---|---|"]
    for fmt, recs in grouped(pos, "format").items():
        leaked = [r for r in recs if result.leaks[r["id"]]]
        at = sorted({p for r in leaked for p in result.leaks[r["id"]]})
        lines.append(f"| {fmt} | {len(recs)} | {pct(1 - len(leaked) / len(recs))} | "
                     f"{', '.join(at) or '-'} |")
    lines += ["", "| look-alike category | records | false positives | eaten in |",
              "|---|---|---|---|"]
    for cat, recs in grouped(look, "category").items():
        eaten = [r for r in recs if result.eaten[r["id"]]]
        at = sorted({p for r in eaten for p in result.eaten[r["id"]]})
        lines.append(f"| {cat} | {len(recs)} | {pct(len(eaten) / len(recs))} | "
                     f"{', '.join(at) or '-'} |")
    return "\n".join(lines) + "\n"
