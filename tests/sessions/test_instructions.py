"""Instruction files: found in a repository, placed per runtime, capped, scrubbed, signed."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from relay.core.events import SessionStarted
from relay.sessions.briefing import instructions_in_force
from relay.sessions.contract import (
    ContractV2,
    InstructionInForce,
    envelope_bytes,
    render_markdown,
    sign,
    verify,
)
from relay.sessions.instructions import MAX_READ, Found, discover, placements
from relay.sessions.instructions_delivery import CLOSE, OPEN, block, cli_line, dialog_text
from tests.conftest import make_repo

KEY = b"k" * 32
SECRET = "sk-ant-api03-" + "aB3dE5fG7h" * 9 + "AA"

REPO_FILES = {
    "README.md": "# demo\n",
    "AGENTS.md": "Run the tests with make test.\n",
    "CLAUDE.md": "Prefer small commits.\n",
    "CLAUDE.local.md": "My own notes.\n",
    "GEMINI.md": "Gemini: be brief.\n",
    "CONVENTIONS.md": "Four-space indents.\n",
    "docs/CONVENTIONS.md": "not an instruction file here\n",
    "api/AGENTS.md": "The API keeps backwards compatibility.\n",
    "api/v2/AGENTS.override.md": "v2 is experimental.\n",
    "api/v2/AGENTS.md": "overridden by the override\n",
    ".github/copilot-instructions.md": "Copilot: use pytest.\n",
    ".cursor/rules/style.mdc": "Cursor: no globals.\n",
    ".claude/rules/testing.md": "Claude rule: tests first.\n",
    ".gitignore": "build/\nCLAUDE.local.md\n",
    "build/AGENTS.md": "generated, ignored\n",
    "node_modules/pkg/AGENTS.md": "a dependency's own\n",
    ".hidden/AGENTS.md": "not searched\n",
    "empty/AGENTS.md": "   \n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", REPO_FILES)


def paths(found: Found) -> list[str]:
    return [f.path for f in found.files]


def test_discovery_finds_root_nested_and_tool_files_not_ignored_ones(repo: Path) -> None:
    found = discover(repo)
    assert sorted(paths(found)) == sorted([
        "AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md", "CONVENTIONS.md",
        "api/AGENTS.md", "api/v2/AGENTS.override.md", ".github/copilot-instructions.md",
        ".cursor/rules/style.mdc", ".claude/rules/testing.md"])
    agents = next(f for f in found.files if f.path == "AGENTS.md")
    assert agents.sha256 == hashlib.sha256(b"Run the tests with make test.\n").hexdigest()
    assert found.skipped == ()


def test_the_quick_look_stays_at_the_root(repo: Path) -> None:
    found = discover(repo, deep=False)
    assert "api/AGENTS.md" not in paths(found)
    assert {"AGENTS.md", ".cursor/rules/style.mdc", ".claude/rules/testing.md"} <= set(paths(found))


def test_binary_unreadable_and_escaping_files_are_skipped_with_a_notice(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": "fine\n", "sub/CLAUDE.md": "x\n",
                                         "latin/AGENTS.md": "x\n"})
    (repo / "GEMINI.md").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    (repo / "latin" / "AGENTS.md").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    outside = tmp_path / "secret.txt"
    outside.write_text("outside the repository\n")
    (repo / "CLAUDE.md").symlink_to(outside)
    (repo / "sub" / "CLAUDE.md").chmod(0)
    try:
        found = discover(repo)
    finally:
        (repo / "sub" / "CLAUDE.md").chmod(0o644)
    root = os.geteuid() == 0  # root reads a file with no permissions
    assert paths(found) == ["AGENTS.md", *(["sub/CLAUDE.md"] if root else [])]
    text = " ".join(found.skipped)
    assert "GEMINI.md was skipped: it is not text." in text
    assert "latin/AGENTS.md was skipped: it is not UTF-8 text." in text
    assert "CLAUDE.md was skipped: it links outside the repository." in text
    if not root:
        assert "sub/CLAUDE.md was skipped: it cannot be read" in text


def test_gemini_reads_the_names_the_project_configures(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {
        "AGENTS.md": "shared\n", "GEMINI.md": "gemini\n",
        ".gemini/settings.json": json.dumps({"context": {"fileName": ["AGENTS.md"]}})})
    found = discover(repo)
    how = {p.file.path: p.how for p in placements("gemini", found)}
    assert how == {"AGENTS.md": "native", "GEMINI.md": "passed_on"}


def how_for(runtime: str, found: Found) -> dict[str, str]:
    return {p.file.path: p.how for p in placements(runtime, found)}


def test_each_runtime_reads_its_own_files_and_gets_the_others(repo: Path) -> None:
    found = discover(repo)
    codex = how_for("codex", found)
    assert [k for k, v in codex.items() if v == "native"] == [
        "AGENTS.md", "api/AGENTS.md", "api/v2/AGENTS.override.md"]
    assert codex["CLAUDE.md"] == codex[".claude/rules/testing.md"] == "passed_on"
    claude = how_for("claude", found)
    assert {k for k, v in claude.items() if v == "native"} == {
        "CLAUDE.md", "CLAUDE.local.md", ".claude/rules/testing.md"}
    assert claude["AGENTS.md"] == "passed_on"
    pi = how_for("pi", found)
    assert pi["AGENTS.md"] == "native"
    assert pi["CLAUDE.md"] == pi["api/AGENTS.md"] == "passed_on"  # AGENTS.md wins; no subfolders
    assert how_for("gemini", found)["GEMINI.md"] == "native"
    for runtime in ("anthropic", "openai", "ollama", "demo", "some-acp-agent"):
        assert set(how_for(runtime, found).values()) == {"passed_on"}
    assert how_for("codex-acp", found) == codex


def test_pi_reads_claude_md_when_there_is_no_agents_md(tmp_path: Path) -> None:
    found = discover(make_repo(tmp_path / "repo", {"CLAUDE.md": "only claude\n"}))
    assert how_for("pi", found) == {"CLAUDE.md": "native"}
    assert how_for("codex", found) == {"CLAUDE.md": "passed_on"}


def test_same_content_is_never_sent_twice(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": "same rules\n"})
    (repo / "CLAUDE.md").symlink_to("AGENTS.md")
    (repo / "GEMINI.md").write_text("same rules\n")
    found = discover(repo)
    assert how_for("codex", found) == {"AGENTS.md": "native", "CLAUDE.md": "duplicate",
                                       "GEMINI.md": "duplicate"}
    passed = block(placements("openai", found)).text
    assert passed.count("same rules") == 1


def test_the_block_is_delimited_and_scoped(repo: Path) -> None:
    text = block(placements("codex", discover(repo))).text
    assert text.startswith(OPEN)
    assert text.endswith(CLOSE)
    assert '<file path="CLAUDE.md">\nPrefer small commits.\n</file>' in text
    assert "Run the tests with make test." not in text  # codex reads AGENTS.md itself
    assert "<file path=\"CLAUDE.md\">" in text
    assert block(placements("codex", Found())).text == ""


def test_nested_files_say_where_they_apply(tmp_path: Path) -> None:
    found = discover(make_repo(tmp_path / "repo", {"api/AGENTS.md": "compat\n"}))
    assert '<file path="api/AGENTS.md" applies-to="api/">' in block(placements("pi", found)).text


def test_the_block_is_capped_and_says_what_is_cut(tmp_path: Path) -> None:
    big = "".join(f"rule {i}: keep it tidy\n" for i in range(200))  # ~4.5 KB
    repo = make_repo(tmp_path / "repo", {"CLAUDE.md": big, "GEMINI.md": "gemini rules\n",
                                         "api/CLAUDE.md": "api rules\n"})
    passed = block(placements("codex", discover(repo)), limit=1000)
    assert len(passed.text.encode()) < 1600
    assert "rule 0: keep it tidy" in passed.text
    assert "rule 199" not in passed.text
    assert passed.cuts[0].startswith("Relay passed on the first ")
    assert f"bytes of CLAUDE.md ({len(big):,} bytes); read the file for the rest." in passed.cuts[0]
    assert passed.cuts[1] == ("Not passed on (over Relay's limit of 1,000 bytes of instruction "
                              "files a run): GEMINI.md, api/CLAUDE.md; read them in the "
                              "repository.")
    assert f"[{passed.cuts[0]}]" in passed.text


def test_a_huge_file_is_read_only_in_part_and_hashed_whole(tmp_path: Path) -> None:
    data = ("x" * 99 + "\n") * (MAX_READ // 100 + 50)
    repo = make_repo(tmp_path / "repo", {"CLAUDE.md": data})
    file = discover(repo).files[0]
    assert not file.complete
    assert file.size == len(data)
    assert len(file.text) <= MAX_READ
    assert file.sha256 == hashlib.sha256(data.encode()).hexdigest()
    assert block(placements("codex", discover(repo))).cuts


def test_a_secret_in_an_instruction_file_is_scrubbed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"CLAUDE.md": f"Deploy with key {SECRET} please.\n"})
    passed = block(placements("openai", discover(repo))).text
    assert SECRET not in passed
    assert "Deploy with key [REDACTED:anthropic_key] please." in passed


def test_summary_lines_for_the_cli_and_the_dialog(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": "a\n", "CLAUDE.md": "c\n"})
    assert cli_line(repo, "codex") == "instructions: AGENTS.md (read by codex), CLAUDE.md (passed on)"
    assert dialog_text(str(repo), "claude") == (
        "Instructions: CLAUDE.md (read by claude), AGENTS.md (passed on).")
    bare = make_repo(tmp_path / "bare")
    assert cli_line(bare, "codex") is None
    assert dialog_text(str(bare), "codex").startswith("No instruction files")
    assert dialog_text("", "codex") == dialog_text(str(tmp_path / "missing"), "codex") == ""


# --- the contract -------------------------------------------------------------------------

def contract(**changes: object) -> ContractV2:
    base = ContractV2(contract_id="c-0123456789ab", session_id="s-abc", task_goal="add a flag",
                      next_action="continue", snapshot_commit_sha="a" * 40)
    return base.model_copy(update=changes)


def test_the_contract_lists_the_files_in_force_and_still_verifies(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": "a\n", "CLAUDE.md": "c\n"})
    events = [SessionStarted(runtime="claude"), SessionStarted(runtime="claude"),
              SessionStarted(runtime="codex")]
    in_force = instructions_in_force(repo, events)
    assert [(i.runtime, i.path, i.how) for i in in_force] == [
        ("claude", "CLAUDE.md", "native"), ("claude", "AGENTS.md", "passed_on"),
        ("codex", "AGENTS.md", "native"), ("codex", "CLAUDE.md", "passed_on")]
    assert in_force[0].sha256 == hashlib.sha256(b"c\n").hexdigest()
    data = envelope_bytes(sign(contract(instructions=in_force), KEY))
    back = verify(data, KEY)
    assert isinstance(back, ContractV2)
    assert back.instructions == in_force
    markdown = render_markdown(back)
    assert "## Project instruction files in force" in markdown
    assert f"- `AGENTS.md` passed on to claude by Relay · sha256 {in_force[1].sha256}" in markdown
    assert "- `AGENTS.md` read by codex itself" in markdown
    tampered = data.replace(b'"how":"native"', b'"how":"passed_on"', 1)
    with pytest.raises(Exception, match="signature"):
        verify(tampered, KEY)


def test_a_contract_without_the_field_serialises_and_verifies_as_before() -> None:
    data = envelope_bytes(sign(contract(), KEY))
    assert b"instructions" not in data
    assert verify(data, KEY) == sign(contract(), KEY)
    assert "instruction files" not in render_markdown(sign(contract(), KEY))


def test_signing_scrubs_an_instruction_path_but_never_its_hash() -> None:
    entry = InstructionInForce(path=f"docs/{SECRET}/AGENTS.md", sha256="b" * 64,
                               runtime="codex", how="native")
    signed = sign(contract(instructions=[entry]), KEY, scrub=lambda v: _scrub(v))
    assert signed.instructions[0].sha256 == "b" * 64
    assert SECRET not in signed.instructions[0].path


def _scrub(value: object) -> object:
    from relay.core.redact import scrub_obj
    return scrub_obj(value)
