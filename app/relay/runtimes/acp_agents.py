"""The ACP agents Relay knows by name (all driven by :class:`~relay.runtimes.acp.AcpAdapter`).

* ``gemini-acp`` — Gemini CLI 0.61.0 in ACP mode: ``gemini --acp`` (its ``--help``
  lists ``--experimental-acp`` as the deprecated spelling). ``--skip-trust`` because
  Relay picks the directory; the permission policy is Gemini's ``--approval-mode``
  (read_only → ``plan``, workspace → ``auto_edit`` plus ``--allowed-tools
  run_shell_command`` as in headless mode, so a command runs without a permission request;
  full → ``yolo``); ``-m`` picks the model.
* ``claude-acp`` — Zed's Claude Code bridge, npm ``@zed-industries/claude-code-acp``
  (pinned 0.16.2); the model through ``ANTHROPIC_MODEL``; the policy through the
  session mode it offers (``acceptEdits``, ``bypassPermissions``, ``plan``).
* ``codex-acp`` — Zed's Codex bridge, npm ``@zed-industries/codex-acp`` (pinned
  0.16.0, a native binary per platform); the model through ``-c model="…"``; the
  policy through its session modes (``read-only``, ``auto``, ``full-access``).

The bridges have no ``--version``: :meth:`NpmBridgeAdapter.info` reads the version
from the package's ``package.json`` beside the executable npm linked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import ClassVar

from relay.core.models import PermissionPolicy
from relay.runtimes.acp import AcpAdapter
from relay.runtimes.base import RunRequest, RuntimeInfo
from relay.runtimes.gemini import INSTALL_HINT as GEMINI_INSTALL_HINT
from relay.runtimes.gemini import SHELL_ALLOWED
from relay.runtimes.probe import npm_info
from relay.runtimes.probe import package_version as package_version  # its home before

GEMINI_APPROVAL: Mapping[PermissionPolicy, str] = {
    PermissionPolicy.READ_ONLY: "plan", PermissionPolicy.WORKSPACE: "auto_edit",
    PermissionPolicy.FULL: "yolo"}


class GeminiAcpAdapter(AcpAdapter):
    """Gemini CLI's ACP mode."""

    name: ClassVar[str] = "gemini-acp"
    binary: ClassVar[str] = "gemini"
    install_hint: ClassVar[str] = GEMINI_INSTALL_HINT
    acp_args: ClassVar[tuple[str, ...]] = ("--acp", "--skip-trust")

    def build_argv(self, request: RunRequest) -> list[str]:
        extra = list(SHELL_ALLOWED) if request.permission is PermissionPolicy.WORKSPACE else []
        return [*super().build_argv(request),
                "--approval-mode", GEMINI_APPROVAL[request.permission], *extra]

    def model_args(self, model: str | None) -> list[str]:
        return ["-m", model] if model else []


class NpmBridgeAdapter(AcpAdapter):
    """An ACP bridge installed from npm (no ``--version`` flag)."""

    package: ClassVar[str]

    def info(self) -> RuntimeInfo:
        return npm_info(self.name, self.binary, self.install_hint, self.package, self.env)


class ClaudeAcpAdapter(NpmBridgeAdapter):
    """Claude Code through Zed's ACP bridge."""

    name: ClassVar[str] = "claude-acp"
    binary: ClassVar[str] = "claude-code-acp"
    package: ClassVar[str] = "@zed-industries/claude-code-acp"
    install_hint: ClassVar[str] = "Install it: npm install -g @zed-industries/claude-code-acp@0.16.2"

    def build_env(self, request: RunRequest) -> dict[str, str]:
        env = super().build_env(request)
        if request.model:
            env["ANTHROPIC_MODEL"] = request.model
        return env


class CodexAcpAdapter(NpmBridgeAdapter):
    """Codex through Zed's ACP bridge."""

    name: ClassVar[str] = "codex-acp"
    binary: ClassVar[str] = "codex-acp"
    package: ClassVar[str] = "@zed-industries/codex-acp"
    install_hint: ClassVar[str] = "Install it: npm install -g @zed-industries/codex-acp@0.16.0"

    def model_args(self, model: str | None) -> list[str]:
        return ["-c", f"model={json.dumps(model)}"] if model else []
