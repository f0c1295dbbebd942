"""What the Board dock and the Integrations dialog ask of the host (Qt-free).

:class:`BoardBackend` is the seam between the Board view-model and the host's board: the
engine's :class:`~relay.board.service.BoardService` (``engine.board``) in the window that
hosts, the host's API (``client.board``) in a window that is its client — same names, same
arguments, same models (:mod:`relay.gui.host_calls`). Tests pass an in-memory fake.
:class:`IntegrationsBackend` does the same for ``engine.integrations`` /
``client.integrations`` (:mod:`relay.board.integrations`): Claude Code's settings in each
configuration folder Relay knows (the default one, and each wallet account's). No Qt here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from relay.gui.host_calls import OverHost

if TYPE_CHECKING:
    from relay.board.claude_setup import Applied
    from relay.board.integrations import ClaudeIntegration
    from relay.board.model import Card, Comment, Project, Task
    from relay.core.live import HookedSession


class BoardBackend(Protocol):
    """The board as the window calls it (every call off the GUI's way)."""

    async def projects(self) -> list[Project]: ...

    async def cards(self, project: str | None = None, *, done: bool = True) -> list[Card]:
        """Every card (of ``project``), in stage order."""
        ...

    async def card(self, key: str) -> Card:
        """One card as it is now (after an event said it changed)."""
        ...

    async def set_stage(self, key: str, stage: str, *,
                        expected_version: int | None = None) -> Task:
        """Move ``key``; with ``expected_version``, refused when the task changed since."""
        ...

    async def comment(self, key: str, body: str) -> Comment: ...

    async def unlinked(self, project: str | None = None) -> list[HookedSession]:
        """Sessions without a task: hooked sessions no open link names (of ``project``)."""
        ...

    async def web_link(self, task: str | None = None) -> str:
        """A one-time sign-in link to the host's web board (landing on ``task``)."""
        ...


class HostBoardBackend(OverHost):
    """The real :class:`BoardBackend`: ``engine.board`` or ``client.board``."""

    async def projects(self) -> list[Project]:
        return await self._services.board.projects()

    async def cards(self, project: str | None = None, *, done: bool = True) -> list[Card]:
        return await self._services.board.cards(project, done=done)

    async def card(self, key: str) -> Card:
        return (await self._services.board.task(key)).card

    async def set_stage(self, key: str, stage: str, *,
                        expected_version: int | None = None) -> Task:
        return await self._services.board.set_stage(key, stage, actor="owner",
                                                    expected_version=expected_version)

    async def comment(self, key: str, body: str) -> Comment:
        return await self._services.board.comment(key, body, author="owner",
                                                  author_kind="owner")

    async def unlinked(self, project: str | None = None) -> list[HookedSession]:
        return await self._services.board.unlinked(project)

    async def web_link(self, task: str | None = None) -> str:
        return await self._host.board_link(task)


class IntegrationsBackend(Protocol):
    """Relay's hooks and MCP server in Claude Code's settings (the Integrations dialog)."""

    async def claude(self, config_dir: Path | None = None) -> list[ClaudeIntegration]:
        """Each folder's plan and check, read-only (``None``: the default folder and every
        Claude account's)."""
        ...

    async def apply(self, config_dir: Path, remove: bool = False) -> list[Applied]:
        """Set ``config_dir`` up (or take Relay's entries out), a backup first."""
        ...


class HostIntegrationsBackend(OverHost):
    """The real :class:`IntegrationsBackend`: ``engine.integrations`` or
    ``client.integrations`` (the host registers its own URL)."""

    async def claude(self, config_dir: Path | None = None) -> list[ClaudeIntegration]:
        return await self._services.integrations.claude(config_dir)

    async def apply(self, config_dir: Path, remove: bool = False) -> list[Applied]:
        integrations = self._services.integrations
        if remove:
            return await integrations.claude_remove(config_dir)
        return await integrations.claude_apply(config_dir)
