"""The guard: the corpus of tool calls and look-alikes, levels, references as JSON."""

from __future__ import annotations

import pytest

from relay.core.errors import ConfigError
from relay.core.guard import (
    Environment,
    EnvRefs,
    GuardPolicy,
    PolicyGuard,
    call_summary,
    decide,
    env_refs_from_json,
    env_refs_to_json,
    environment_from_json,
    environment_to_json,
)
from relay.core.guard_shell import parse
from tests.core.guard_corpus import CASES, POLICY, WORKTREE, Case


def _id(case: Case) -> str:
    text = str(case.input.get("command") or case.input)
    return f"{case.tool}:{text[:60]}"


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 150
    silent = [c for c in CASES if c.decision is None]
    assert len(silent) >= 60  # look-alikes and reads, not only hits
    assert {c.decision for c in CASES} == {None, "deny", "ask", "warn"}


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_corpus(case: Case) -> None:
    verdict = decide(POLICY, case.tool, case.input, WORKTREE)
    if case.decision is None:
        assert verdict is None, verdict
        return
    assert verdict is not None, f"{case.tool} {case.input} was not recognised"
    assert verdict.decision == case.decision, verdict
    if case.rule is not None:
        assert verdict.rule == case.rule, verdict
    assert verdict.environment == case.env, verdict
    assert verdict.reason
    assert "\n" not in verdict.reason


@pytest.mark.parametrize(("level", "kind", "command", "expected"), [
    ("none", "test", "kubectl --context x get pods", "deny"),
    ("none", "local", "kubectl --context x delete pod y", "deny"),
    ("read", "live", "kubectl --context x get pods", None),
    ("read", "live", "kubectl --context x delete pod y", "deny"),
    ("ask", "local", "kubectl --context x get pods", "ask"),
    ("ask", "live", "kubectl --context x delete pod y", "ask"),
    ("full", "live", "kubectl --context x delete pod y", "warn"),
    ("full", "live", "kubectl --context x get pods", None),
    ("full", "test", "kubectl --context x delete pod y", None),
])
def test_levels(level: str, kind: str, command: str, expected: str | None) -> None:
    policy = GuardPolicy((Environment("x", kind, level, EnvRefs(kube_contexts=("x",))),))  # type: ignore[arg-type]
    verdict = decide(policy, "Bash", {"command": command}, None)
    assert (verdict.decision if verdict else None) == expected


def test_reason_names_what_where_and_level() -> None:
    verdict = decide(POLICY, "Bash", {"command": "kubectl --context prod delete pod x"}, None)
    assert verdict is not None
    assert "kubectl delete" in verdict.reason
    assert '"prod"' in verdict.reason
    assert "live" in verdict.reason
    assert "read" in verdict.reason


def test_reason_and_summary_are_scrubbed() -> None:
    secret = "postgres://app:S3cr3tPassw0rdXyZ@db.prod.example.com/app"
    call = {"command": f"psql {secret} -c 'DELETE FROM x'"}
    verdict = decide(POLICY, "Bash", call, None)
    assert verdict is not None
    assert verdict.decision == "deny"
    assert "S3cr3tPassw0rdXyZ" not in verdict.reason
    summary = call_summary("Bash", call)
    assert "S3cr3tPassw0rdXyZ" not in summary
    assert summary.startswith("Bash: psql")


def test_summary_is_one_bounded_line() -> None:
    summary = call_summary("Bash", {"command": "echo a\n" * 100})
    assert "\n" not in summary
    assert len(summary) <= 200
    assert call_summary("Write", {"file_path": "/etc/x"}) == "Write: /etc/x"


def test_no_worktree_means_no_file_rule() -> None:
    policy = GuardPolicy()
    assert decide(policy, "Bash", {"command": "rm -rf /etc"}, None) is None
    assert decide(policy, "Bash", {"command": "git push -f"}, None) is not None


def test_repo_is_the_root_without_a_worktree() -> None:
    policy = GuardPolicy(repo="/home/u/proj")
    assert decide(policy, "Write", {"file_path": "/home/u/proj/a.py"}, None) is None
    verdict = decide(policy, "Write", {"file_path": "/home/u/other/a.py"}, None)
    assert verdict is not None
    assert verdict.rule == "fs.outside_worktree"


def test_policy_guard_is_a_guard() -> None:
    guard = PolicyGuard(POLICY)
    verdict = guard.check("Bash", {"command": "npm publish"}, WORKTREE)
    assert verdict is not None
    assert verdict.decision == "ask"
    assert guard.check("Bash", {"command": "ls"}, WORKTREE) is None


def test_compound_commands_split() -> None:
    names = {c.name for c in parse("a && b || c; d | e & f\ng (h) $(i) `j`")}
    assert names >= set("abcdefghij")


def test_refs_round_trip_as_json() -> None:
    refs = EnvRefs(kube_contexts=("prod",), urls=("https://api.example.com",))
    data = env_refs_to_json(refs)
    assert data == {"kube_contexts": ["prod"], "urls": ["https://api.example.com"]}
    assert env_refs_from_json(data) == refs
    assert env_refs_from_json('{"ssh_hosts": "bastion"}') == EnvRefs(ssh_hosts=("bastion",))
    env = Environment("prod", "live", "read", refs, "careful")
    assert environment_from_json(environment_to_json(env)) == env


@pytest.mark.parametrize("bad", [
    {"urls": ["https://user:hunter2Secret99x@api.example.com"]},
    {"db_hosts": ["postgres://app:Sup3rS3cretPassw0rd@db/app"]},
    {"hosts": ["ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"]},
    {"kube_contexts": [""]},
    {"kube_contexts": ["a\nb"]},
    {"passwords": ["x"]},
    {"urls": [1]},
    "not json",
    ["prod"],
])
def test_refs_that_are_not_references_are_refused(bad: object) -> None:
    with pytest.raises(ConfigError) as info:
        env_refs_from_json(bad)  # type: ignore[arg-type]
    assert info.value.hint is not None or "must be" in info.value.message
    assert "hunter2Secret99x" not in str(info.value)
    assert "Sup3rS3cretPassw0rd" not in str(info.value)


@pytest.mark.parametrize("bad", [{"name": "", "kind": "live", "level": "read"},
                                 {"name": "x", "kind": "prod", "level": "read"},
                                 {"name": "x", "kind": "live", "level": "admin"}])
def test_bad_environment_json_is_refused(bad: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        environment_from_json(bad)


def test_guard_never_allows() -> None:
    decisions = {decide(POLICY, c.tool, c.input, WORKTREE) for c in CASES}
    assert all(v is None or v.decision in ("deny", "ask", "warn") for v in decisions)


def test_writing_outside_the_worktree_asks_deleting_is_refused_scratch_is_open() -> None:
    policy = GuardPolicy(repo="/home/u/proj", worktree="/home/u/proj", scratch=("/tmp",))
    def verdict(command: str) -> tuple[str, str] | None:
        found = decide(policy, "Bash", {"command": command}, "/home/u/proj")
        return (found.decision, found.rule) if found else None
    assert verdict("echo x > /tmp/out.txt") is None
    assert verdict("rm -rf /tmp/scratch-1") is None
    assert verdict("mktemp -d && touch /tmp/a/b") is None
    assert verdict("echo x >> /home/u/.bashrc") == ("ask", "fs.outside_worktree")
    assert verdict("rm -rf /home/u/other") == ("deny", "fs.outside_worktree")
    assert verdict("mv notes.txt /srv/notes.txt") == ("deny", "fs.outside_worktree")
    # a folder only starting like the scratch folder is not in it
    assert verdict("echo x > /tmpfoo/out.txt") == ("ask", "fs.outside_worktree")
