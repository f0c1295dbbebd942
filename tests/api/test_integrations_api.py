"""``/api/v1/integrations/claude`` through the client on a real socket: the window's
Integrations page sees each folder's plan and check, sets it up with the host's own URL and
takes it out again; a bad folder is the same SetupError on the client's side."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from relay.board.claude_setup import HOOK_EVENTS
from relay.core.errors import AccountError, SetupError
from tests.api.conftest import Served

SETTINGS = b'{\n  "model": "opus",\n  "hooks": {"Stop": [{"hooks": [{"type": "command", ' \
           b'"command": "mine"}]}]}\n}\n'


@pytest.fixture(autouse=True)
def own_claude_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                      vault_env: None) -> Path:
    """The default folder is the test's (never the developer's ~/.claude)."""
    folder = tmp_path / "default-claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    return folder


async def test_plan_check_apply_remove_over_the_api(served: Served, tmp_path: Path) -> None:
    folder = tmp_path / "claude"
    folder.mkdir()
    (folder / "settings.json").write_bytes(SETTINGS)
    [before] = await served.client.integrations.claude(config_dir=folder)
    assert before.ok is False
    assert before.target.config_dir == folder
    assert {i.action for i in before.plan.items} == {"add"}
    assert before.check.host_url == served.host.url
    assert before.check.expected_url == f"{served.host.url}/mcp"

    [applied] = await served.client.integrations.claude_apply(config_dir=folder)
    assert applied.written == [str(folder / "settings.json"), str(folder / ".claude.json")]
    server = json.loads((folder / ".claude.json").read_text())["mcpServers"]["relay"]
    assert server["url"] == f"{served.host.url}/mcp"  # the host's own port, not the default
    [after] = await served.client.integrations.claude(config_dir=str(folder))
    assert after.ok
    assert {i.state for i in after.check.items} == {"ok"}
    assert len(after.check.items) == len(HOOK_EVENTS) + 2  # and the allow rules, the MCP server

    async with httpx.AsyncClient() as http:
        raw = await http.get(f"{served.host.url}/api/v1/integrations/claude",
                             params={"config_dir": str(folder)},
                             headers={"Authorization": f"Bearer {served.token}"})
    assert raw.status_code == 200
    assert served.token not in raw.text
    assert served.token not in (folder / "settings.json").read_text()

    [removed] = await served.client.integrations.claude_remove(config_dir=folder)
    assert removed.plan.remove
    assert (folder / "settings.json").read_bytes() == SETTINGS


async def test_the_default_folder_and_every_claude_account(served: Served, tmp_path: Path,
                                                           own_claude_folder: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "codex").mkdir()
    await served.client.accounts.add("claude", "work", work)
    await served.client.accounts.add("codex", "ci", tmp_path / "codex")
    found = await served.client.integrations.claude()
    assert [(i.target.label, i.target.config_dir) for i in found] == [
        ("default", own_claude_folder), ("claude:work", work)]
    [one] = await served.client.integrations.claude_apply(account="work")
    assert one.plan.target.config_dir == work
    assert (work / "settings.json").exists()
    assert not own_claude_folder.exists()
    with pytest.raises(AccountError, match="No Claude account 'ci'"):
        await served.client.integrations.claude(account="ci")


async def test_a_bad_folder_is_a_setup_error_on_the_client(served: Served,
                                                           tmp_path: Path) -> None:
    with pytest.raises(SetupError, match="not an absolute path"):
        await served.client.integrations.claude_apply(config_dir="relative/folder")
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "settings.json").write_text("[1]")
    with pytest.raises(SetupError, match="not an object") as caught:
        await served.client.integrations.claude_apply(config_dir=folder)
    assert caught.value.hint
    assert (folder / "settings.json").read_text() == "[1]"
    async with httpx.AsyncClient() as http:
        bad = await http.post(f"{served.host.url}/api/v1/integrations/claude",
                              json={"action": "explode", "config_dir": str(folder)},
                              headers={"Authorization": f"Bearer {served.token}"})
    assert bad.status_code in (400, 422)
