"""A pipeline written to a file of its own leaves Relay: its prompts are scrubbed first."""

from __future__ import annotations

import secrets
from pathlib import Path

from relay.core.pipeline_model import parse_pipeline
from relay.pipelines import files


def test_an_exported_pipeline_carries_no_secret(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + secrets.token_urlsafe(70)
    pipeline = parse_pipeline({"name": "deploy", "nodes": [
        {"id": "a", "provider": "demo", "task": f"call the API with {key} and report"}]})
    out = tmp_path / "deploy.json"
    files.export(pipeline, out)
    text = out.read_text()
    assert key not in text
    assert "[REDACTED:anthropic_key]" in text
    (back,) = files.read_file(out)  # still a valid pipeline file
    assert back.name == "deploy"
    assert "[REDACTED:anthropic_key]" in back.nodes[0].task
