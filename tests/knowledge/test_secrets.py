"""Nothing the scrubber flags, and nothing from the vault or a credentials file, ever reaches
the knowledge index: not its rows, not its full-text index, not the file's bytes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.core.events import AssistantText, ToolCall
from relay.core.models import SessionSpec
from relay.core.store.writer import WriteOp
from relay.core.vault import Vault
from relay.engine.engine import Engine
from relay.knowledge.service import Knowledge
from tests.conftest import make_repo

OPENAI_KEY = "sk-proj-" + "Q7xVb2LmN9pR4tK8wZ3yH6jD1fG5sA0c" * 2
ANTHROPIC_KEY = "sk-ant-api03-" + "Zt4Kq9Wm2Xr7Lp3Vn8Bc5Hd1Gf6Js0Ya" * 3
ENV_ONLY = "ghp_" + "R8tY2uI4oP6aS9dF1gH3jK5lZ7xC0vB2nM4q"
VAULT_SECRET = "vault-only-value-7f3c9a2e4b6d8f0a"


def index_bytes(knowledge: Knowledge) -> bytes:
    """The index file and its write-ahead log, as they are on disk."""
    return b"".join(p.read_bytes() for p in (knowledge.path, Path(f"{knowledge.path}-wal"))
                    if p.exists())


@pytest.fixture
async def knowledge() -> AsyncIterator[Knowledge]:
    k = Knowledge(load_config())
    yield k
    await k.close()


async def test_an_api_key_in_the_code_is_never_indexed(knowledge: Knowledge,
                                                       tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "app", {
        "app/settings.py": f'"""Settings."""\n\nOPENAI_API_KEY = "{OPENAI_KEY}"\n\n\n'
                           f"def client():\n    return Client(api_key=\"{OPENAI_KEY}\")\n",
        ".env": f"GITHUB_TOKEN={ENV_ONLY}\n",
        "config/.env.production.js": f"export const token = '{ENV_ONLY}';\n",
    })
    report = await knowledge.scan(repo)
    assert report.skipped["sensitive"] == 2  # .env and .env.production.js are never read

    assert all(OPENAI_KEY not in h.snippet for h in await knowledge.retrieve(OPENAI_KEY))
    assert await knowledge.retrieve(OPENAI_KEY[8:40]) == []
    assert await knowledge.retrieve(ENV_ONLY) == []
    marked = await knowledge.retrieve("REDACTED openai_key")
    assert {h.title for h in marked} >= {"OPENAI_API_KEY", "client"}
    assert all(OPENAI_KEY not in h.snippet for h in marked)
    raw = index_bytes(knowledge)
    assert raw  # the index holds the code …
    for secret in (OPENAI_KEY, OPENAI_KEY[8:40], ENV_ONLY):  # … never the keys
        assert secret.encode() not in raw


async def test_the_vault_and_the_data_folder_are_never_read(tmp_path: Path, vault_env: None,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    repo = make_repo(tmp_path / "proj", {"main.py": "def main():\n    pass\n"})
    home = repo / ".relay-data"  # the data folder inside the repository, not ignored
    monkeypatch.setenv("RELAY_HOME", str(home))
    config = load_config()
    Vault.open(config).set("deploy-token", VAULT_SECRET)
    copy = home / "worktrees" / "s1" / "leak.py"
    copy.parent.mkdir(parents=True)
    copy.write_text(f'TOKEN = "{VAULT_SECRET}"\n\ndef leaked_helper():\n    pass\n')
    knowledge = Knowledge(config)
    try:
        report = await knowledge.scan(repo)
        assert report.skipped["data_folder"] >= 1
        assert [h.title for h in await knowledge.retrieve("leaked helper main")] == ["main"]
        assert VAULT_SECRET.encode() not in index_bytes(knowledge)
    finally:
        await knowledge.close()


async def test_a_secret_an_agent_wrote_is_scrubbed_before_it_is_indexed(engine: Engine,
                                                                        git_repo: Path) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="Deploy", runtime="demo"))
    # written straight to the store (the runner would have scrubbed them): the index
    # scrubs again, at its only write
    await engine.writer.write(WriteOp(row.id, None, AssistantText(
        text=f"Decision: use the staging key {ANTHROPIC_KEY} for the deploy step.")))
    await engine.writer.write(WriteOp(row.id, None, ToolCall(
        call_id="c1", name="Bash", input={"command": f"export ANTHROPIC_API_KEY={ANTHROPIC_KEY}"})))
    await engine.knowledge.ingest(engine.store)

    decisions = await engine.knowledge.facts(row.id, ["decision"])
    assert [d.text for d in decisions] == [
        "Decision: use the staging key [REDACTED:anthropic_key] for the deploy step."]
    found = await engine.knowledge.retrieve(ANTHROPIC_KEY)  # "ant…" finds the marker …
    assert found
    assert all(ANTHROPIC_KEY[13:] not in h.snippet for h in found)
    assert await engine.knowledge.retrieve(ANTHROPIC_KEY[13:45]) == []  # … never the key
    assert ANTHROPIC_KEY.encode() not in index_bytes(engine.knowledge)
    assert ANTHROPIC_KEY[13:45].encode() not in index_bytes(engine.knowledge)
