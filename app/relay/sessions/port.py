"""What a feature service may ask of the engine: start, follow and stop sessions.

Pipelines, detect's adopt and the planner run their work as Relay sessions. They take a
:class:`SessionControl` — declared here, below them — instead of the whole Engine, so the
engine package stays the only one that knows every feature (the layers contract) and a
test can hand them any object with these methods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from relay.core.config import Config
    from relay.core.events import EventRecord, Notice
    from relay.core.models import SessionRow, SessionSpec
    from relay.core.vault import PassphraseProvider


class SessionControl(Protocol):
    """The engine as a feature service sees it (:class:`relay.engine.engine.Engine` is one)."""

    @property
    def config(self) -> Config: ...

    @property
    def passphrase_provider(self) -> PassphraseProvider | None:
        """Asks the user for the vault's passphrase when a signing key is needed."""
        ...

    async def start_session(self, spec: SessionSpec) -> str: ...

    async def continue_session(self, session_id: str, prompt: str) -> str: ...

    async def wait_session(self, session_id: str) -> SessionRow: ...

    async def cancel_session(self, session_id: str) -> None: ...

    async def reap_session(self, session_id: str) -> bool: ...

    async def session_events(self, session_id: str, after_id: int = 0,
                             limit: int = 100_000) -> list[EventRecord]: ...

    async def session_cost(self, session_id: str) -> float | None:
        """What the session's runs cost so far (None: nothing reported or estimated)."""
        ...

    async def post_notice(self, session_id: str, notice: Notice) -> None:
        """Add a notice to a session's stream (scrubbed on the way in)."""
        ...
