"""End to end: `relay-cli pipeline run` with the REAL Claude Code and Codex CLIs.

plan (demo) → implement on Claude with Codex as fallback → review (demo). Claude, as a
subscriber, hits its usage limit (the mock answers 429 with the unified rate-limit
headers); the node's chain hands the task to Codex, which answers; review reads what
implement changed. Each step is a Relay session in its own worktree, saved once.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from tests.fakes import mock_anthropic, mock_openai
from tests.integration.helpers import (
    RELAY,
    claude_env,
    codex_env,
    real_claude_fixture,  # noqa: F401  (fixture "real_claude")
    real_codex_fixture,  # noqa: F401  (fixture "real_codex")
    run_cli,
)

pytestmark = pytest.mark.integration

PIPELINE = {"name": "greet", "nodes": [
    {"id": "plan", "provider": "demo", "task": "Plan a greeting module."},
    {"id": "implement", "provider": "claude", "fallback": ["codex"], "dependsOn": ["plan"],
     "task": "Implement it. The plan: {{plan.output}}"},
    {"id": "review", "provider": "demo", "dependsOn": ["implement"],
     "task": "Review {{implement.files}}: {{implement.output}}"}]}


def test_claude_limit_in_a_pipeline_node_hands_off_to_codex(
        real_claude: Path, real_codex: Path, git_repo: Path, tmp_path: Path,
        relay_home: Path) -> None:
    resets_at = int(time.time()) + 7200
    limit = {"repeat": -1, "error": {
        "status": 429, "type": "rate_limit_error", "message": "Error",
        "headers": {"anthropic-ratelimit-unified-status": "rejected",
                    "anthropic-ratelimit-unified-reset": str(resets_at),
                    "anthropic-ratelimit-unified-representative-claim": "five_hour",
                    "anthropic-ratelimit-unified-overage-status": "rejected"}}}
    patch = ("*** Begin Patch\n*** Add File: greet.py\n+def greet(name):\n"
             "+    return f\"Hello, {name}!\"\n*** End Patch\n")
    codex_script = {"turns": [
        {"items": [{"type": "custom_tool_call", "name": "apply_patch", "input": patch}]},
        {"text": "Added greet.py with greet(name)."}]}
    (tmp_path / "p.json").write_text(json.dumps(PIPELINE))
    with mock_anthropic.serve({"turns": [limit]}) as claude_mock, \
            mock_openai.serve(codex_script) as codex_mock:
        env = claude_env(tmp_path, claude_mock, oauth=True)
        codex = codex_env(tmp_path, codex_mock)
        env.update({"CODEX_HOME": codex["CODEX_HOME"], "MOCK_API_KEY": codex["MOCK_API_KEY"],
                    "RELAY_HOME": str(relay_home), "RELAY_CLAUDE_BIN": str(real_claude),
                    "RELAY_CODEX_BIN": str(real_codex), "RELAY_DEMO_STEP_DELAY": "0",
                    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
                    "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
                    "RELAY_VAULT_PASSPHRASE": "integration-passphrase", "COLUMNS": "200"})
        run = run_cli([*RELAY, "pipeline", "run", str(tmp_path / "p.json"), "--repo",
                       str(git_repo)], env=env, cwd=git_repo, timeout=240)
    assert run.returncode == 0, run.describe()
    with sqlite3.connect(relay_home / "relay.db") as conn:
        steps = {r[0]: r[1:] for r in conn.execute(
            "SELECT node_id, state, saves, session_id, files_json, output FROM pipeline_steps")}
        implement_runs = conn.execute(
            "SELECT runtime, outcome FROM runs WHERE session_id=? ORDER BY attempt",
            (steps["implement"][2],)).fetchall()
        review_task = conn.execute("SELECT task FROM sessions WHERE id=?",
                                   (steps["review"][2],)).fetchone()[0]
    assert {k: v[:2] for k, v in steps.items()} == {
        "plan": ("succeeded", 1), "implement": ("succeeded", 1), "review": ("succeeded", 1)}
    assert implement_runs == [("claude", "failed"), ("codex", "completed")]
    assert "greet.py" in json.loads(steps["implement"][3])
    assert steps["implement"][4] == "Added greet.py with greet(name)."
    assert review_task.startswith("Review ")
    assert "greet.py" in review_task
    assert "Added greet.py with greet(name)." in review_task
