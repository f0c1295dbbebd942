"""The secrets corpus through the REAL Claude Code (issue 20's integration tier).

One record of every positive format and every look-alike category (tests/secrets) goes to
``relay-cli run … --provider claude --json`` driving the pinned Claude Code against the
loopback ``mock_anthropic``: each mock reply says the records as assistant text and asks for
one Bash call per record that prints it (``cat <<'EOF' … EOF``), so the record comes back
as the tool's real output too. Then the data folder and relay-cli's output are searched
like the fake-agent measurement does (tests/secrets/measure.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import mock_anthropic
from tests.integration.helpers import (
    claude_env,
    events_of,
    final_state,
    kinds,
    real_claude_fixture,  # noqa: F401  (fixture "real_claude")
    relay_env,
    relay_run,
)
from tests.secrets import make_corpus
from tests.secrets.measure import FP_MAX, RECALL_MIN, needles
from tests.secrets.scan import boundaries
from tests.secrets.transcript import command_for

pytestmark = pytest.mark.integration

PER_TURN = 8


def sample() -> list[dict[str, Any]]:
    """The first record of each format and of each look-alike category."""
    seen: set[str] = set()
    picked = []
    for record in make_corpus.load():
        key = record.get("format") or record["category"]
        if key not in seen:
            seen.add(key)
            picked.append(record)
    return picked


def script(records: list[dict[str, Any]]) -> dict[str, Any]:
    turns = []
    for start in range(0, len(records), PER_TURN):
        chunk = records[start:start + PER_TURN]
        turns.append({"text": "\n\n".join(r["text"] for r in chunk), "tool_uses": [
            {"name": "Bash", "id": f"toolu_corpus_{r['id']}",
             "input": {"command": command_for(r["text"]), "description": "Show it"}}
            for r in chunk]})
    turns.append({"text": "Done."})
    return {"turns": turns}


def test_the_corpus_through_real_claude_code(real_claude: Path, git_repo: Path,
                                             tmp_path: Path, relay_home: Path) -> None:
    records = sample()
    with mock_anthropic.serve(script(records)) as mock:
        env = relay_env(claude_env(tmp_path, mock), relay_home, "claude", real_claude)
        run = relay_run(env, git_repo, "claude", "Find the service configuration")
    assert run.returncode == 0, run.describe()
    events = events_of(run)
    assert final_state(events) == "completed", run.describe()
    results = {e["call_id"]: e for e in kinds(events, "tool_result")}
    assert len(results) == len(records), run.describe()
    assert not [e for e in results.values() if e["is_error"]], "a Bash call was refused"

    places = {**boundaries(relay_home), "stdout": run.stdout.encode(),
              "stderr": run.stderr.encode()}
    positives = [r for r in records if r["kind"] == "positive"]
    leaks = {r["format"]: sorted(p for p, data in places.items()
                                 if any(n in data for n in needles(r["secret"])))
             for r in positives}
    on_output = {f: at for f, at in leaks.items() if {"stdout", "stderr"} & set(at)}
    per_place = {p: sum(1 for at in leaks.values() if p in at) / len(positives)
                 for p in places}

    said = "\n".join(e["text"] for e in kinds(events, "assistant_text"))
    calls = {e["call_id"]: json.dumps(e["input"], ensure_ascii=False)
             for e in kinds(events, "tool_call")}
    eaten = sorted(r["category"] for r in records if r["kind"] == "lookalike" and (
        r["text"] not in said
        or json.dumps(r["text"], ensure_ascii=False)[1:-1] not in calls[f"toolu_corpus_{r['id']}"]
        or r["text"] not in results[f"toolu_corpus_{r['id']}"]["output"]))
    lookalikes = len(records) - len(positives)

    assert on_output == {}, f"secrets on relay-cli's output: {on_output}"
    assert all(1 - share >= RECALL_MIN for share in per_place.values()), \
        f"leaking formats: { {f: at for f, at in leaks.items() if at} }"
    assert len(eaten) / lookalikes <= FP_MAX, f"look-alikes eaten: {eaten}"
