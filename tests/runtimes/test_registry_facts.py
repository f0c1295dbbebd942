"""The static facts core keeps about runtimes agree with the adapters that run them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from relay.core.errors import UnknownRuntimeError
from relay.core.models import SIMULATED_RUNTIMES, simulated_entry
from relay.runtimes import registry
from relay.runtimes.probe import RuntimeInfo
from relay.runtimes.registry import adapter_class, available_runtimes, facts, runtime_info


@pytest.mark.parametrize("runtime", available_runtimes())
def test_simulated_runtimes_match_each_adapters_flag(runtime: str) -> None:
    assert (runtime in SIMULATED_RUNTIMES) is adapter_class(runtime).simulated


def test_a_chain_entry_is_simulated_by_its_runtime_not_its_account() -> None:
    assert simulated_entry("demo:alice")
    assert not simulated_entry("claude:demo")
    assert not simulated_entry("no-such-runtime")


def _fake_cli(folder: Path, name: str, script: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(0o755)
    return path


def _npm_bridge(folder: Path, package: str, binary: str, version: str) -> Path:
    """An npm-installed bridge: package.json beside the linked executable's target."""
    pkg = folder / "node_modules" / package
    (pkg / "bin").mkdir(parents=True)
    (pkg / "package.json").write_text(json.dumps({"name": package, "version": version}))
    target = _fake_cli(pkg / "bin", binary, "exit 0")
    (folder / "bin").mkdir(exist_ok=True)
    (folder / "bin" / binary).symlink_to(target)
    return folder / "bin"


def _environments(tmp_path: Path) -> dict[str, dict[str, str]]:
    """Environments that take each kind of probe down each of its paths."""
    found = tmp_path / "found"
    found.mkdir(parents=True)
    for binary in ("claude", "codex", "gemini", "pi"):
        _fake_cli(found, binary, f'echo "{binary} 1.2.3 (fake)"')
    broken = tmp_path / "broken"
    broken.mkdir()
    for binary in ("claude", "codex", "gemini", "pi"):
        _fake_cli(broken, binary, "echo boom >&2; exit 3")
    bridges = _npm_bridge(tmp_path / "npm", "@zed-industries/claude-code-acp", "claude-code-acp",
                          "0.16.2")
    _npm_bridge(tmp_path / "npm2", "@zed-industries/codex-acp", "codex-acp", "0.16.0")
    bridges2 = tmp_path / "npm2" / "bin"
    return {
        "nothing": {"PATH": str(tmp_path / "empty"), "OLLAMA_HOST": "127.0.0.1:1"},
        "installed": {"PATH": f"{found}:{bridges}:{bridges2}", "ANTHROPIC_API_KEY": "k",
                      "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                      "OLLAMA_HOST": "0.0.0.0:1"},
        "broken": {"PATH": str(broken), "RELAY_CODEX_BIN": "/no/such/codex",
                   "RELAY_CLAUDE_ACP_BIN": str(found / "claude"), "OLLAMA_HOST": "127.0.0.1:1"},
    }


@pytest.mark.parametrize("runtime", available_runtimes())
def test_the_registry_s_facts_are_the_adapter_s(runtime: str) -> None:
    fact = facts(runtime)
    cls: Any = adapter_class(runtime)

    assert cls.name == runtime
    assert set(available_runtimes()) == set(registry._FACTS)
    if fact.probe in ("cli", "npm"):
        assert (cls.binary, cls.install_hint) == (fact.binary, fact.install_hint)
    if fact.probe == "npm":
        assert cls.package == fact.package
    if fact.probe == "http":
        p = cls.provider_class
        assert (p.key_env, p.base_env, p.default_base, p.account_provider) == (
            fact.key_env, fact.base_env, fact.default_base, fact.account_provider)


@pytest.mark.parametrize("runtime", available_runtimes())
def test_doctor_s_probe_from_the_facts_is_the_adapter_s_info(runtime: str,
                                                              tmp_path: Path) -> None:
    for name, env in _environments(tmp_path / runtime).items():
        assert runtime_info(runtime, env) == adapter_class(runtime)(env).info(), name


def test_the_probes_report_what_they_found() -> None:
    env = {"PATH": "/nonexistent", "OLLAMA_HOST": "127.0.0.1:1"}

    assert runtime_info("demo", env) == RuntimeInfo("demo", "(built in)", "scripted demo")
    assert runtime_info("claude", env).problem == (
        "The claude CLI (`claude`) is not installed or not on PATH.")
    assert runtime_info("anthropic", env).problem == (
        "No ANTHROPIC_API_KEY in the environment (an api_key account brings its own).")
    with pytest.raises(UnknownRuntimeError):
        runtime_info("no-such-runtime", env)
