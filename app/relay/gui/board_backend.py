"""What the Board dock and the Integrations dialog ask of the host (Qt-free).

:class:`BoardBackend` is the seam between the Board view-model and the host's board: the
engine's :class:`~relay.board.service.BoardService` (``engine.board``) in the window that
hosts, the host's API (``client.board``) in a window that is its client — same names, same
arguments, same models (:mod:`relay.gui.host_calls`). Tests pass an in-memory fake.
:class:`IntegrationsBackend` does the same for ``engine.integrations`` /
``client.integrations``: Claude Code's settings in each configuration folder Relay knows (the
default one, and each wallet account's). No Qt here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from relay.gui.host_calls import OverHost

if TYPE_CHECKING:
    from relay.board.model import Card, Comment, Project, Task


class BoardBackend(Protocol):
    """The board as the window calls it (every call off the GUI's way)."""

    async def projects(self) -> list[Project]: ...

    async def cards(self, project: str | None = None, *, done: bool = True) -> list[Card]:
        """Every card (of ``project``), in stage order."""
        ...

    async def card(self, key: str) -> Card:
        """One card as it is now (after an event said it changed)."""
        ...

    async def set_stage(self, key: str, stage: str) -> Task: ...

    async def comment(self, key: str, body: str) -> Comment: ...

    async def web_link(self) -> str:
        """A one-time sign-in link to the host's web board."""
        ...


class HostBoardBackend(OverHost):
    """The real :class:`BoardBackend`: ``engine.board`` or ``client.board``."""

    async def projects(self) -> list[Project]:
        return await self._services.board.projects()

    async def cards(self, project: str | None = None, *, done: bool = True) -> list[Card]:
        return await self._services.board.cards(project, done=done)

    async def card(self, key: str) -> Card:
        return (await self._services.board.task(key)).card

    async def set_stage(self, key: str, stage: str) -> Task:
        return await self._services.board.set_stage(key, stage, actor="owner")

    async def comment(self, key: str, body: str) -> Comment:
        return await self._services.board.comment(key, body, author="owner",
                                                  author_kind="owner")

    async def web_link(self) -> str:
        return await self._host.board_link()


#: a Claude configuration folder as the Integrations dialog lists it: None = the default one
Folder = Path | None


@dataclass(frozen=True, slots=True)
class ConfigFolder:
    """A Claude Code configuration folder Relay can set up."""

    #: None: Claude Code's default folder (``~/.claude``, or ``$CLAUDE_CONFIG_DIR``)
    path: Folder
    #: what it is to the user: "default" or the wallet account's entry
    label: str


class IntegrationsBackend(Protocol):
    """Relay's hooks and MCP server in Claude Code's settings (the Integrations dialog)."""

    async def folders(self) -> list[ConfigFolder]: ...

    async def check(self, folder: Folder) -> Any:
        """What is and is not in place there (read-only)."""
        ...

    async def plan(self, folder: Folder, remove: bool = False) -> Any:
        """What Set up (or Remove) would change, without changing anything."""
        ...

    async def apply(self, folder: Folder, remove: bool = False) -> Any:
        """Set up (or remove) Relay's entries, a backup first."""
        ...


class HostIntegrationsBackend(OverHost):
    """The real :class:`IntegrationsBackend`: ``engine.integrations`` / ``client.integrations``
    and the account book's Claude folders."""

    async def folders(self) -> list[ConfigFolder]:
        accounts = await self._services.accounts.all()
        return [ConfigFolder(None, "default"), *(
            ConfigFolder(a.config_dir, a.entry) for a in accounts
            if a.provider == "claude" and a.config_dir is not None)]

    async def check(self, folder: Folder) -> Any:
        return await self._services.integrations.check(folder)

    async def plan(self, folder: Folder, remove: bool = False) -> Any:
        return await self._services.integrations.plan(folder, remove=remove)

    async def apply(self, folder: Folder, remove: bool = False) -> Any:
        integrations = self._services.integrations
        if remove:
            return await integrations.remove(folder)
        return await integrations.apply(folder)
