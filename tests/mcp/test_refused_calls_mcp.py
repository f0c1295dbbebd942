"""An MCP client sees a session's refused tool calls with its state (relay_list_sessions,
relay_get_session), never a silent success."""

from __future__ import annotations

from datetime import UTC, datetime

from relay.core.models import PermissionPolicy, SessionRow
from relay.mcp.results import session_info, session_line

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def row(refused: int) -> SessionRow:
    return SessionRow(id="abc123", repo="/r", task="Clean the build", runtime="gemini",
                      model=None, state="completed", permission=PermissionPolicy.WORKSPACE,
                      workdir=None, branch=None, agent_session_id=None, reason=None,
                      simulated=False, created_at=NOW, updated_at=NOW, refused_calls=refused)


def test_the_count_and_the_line() -> None:
    info = session_info(row(2), running_here=False)
    assert (info.state, info.refused_calls) == ("completed", 2)
    assert session_line(info).startswith("abc123 · completed · 2 tool calls refused · gemini")
    clean = session_info(row(0), running_here=False)
    assert session_line(clean).startswith("abc123 · completed · gemini")
