"""The needs-input tools: what a session's agent asks, and the answer (``engine.answer_input``).

A session started with ``approvals`` ``ask`` or ``read_only`` waits in state
``needs_input`` when its agent asks something the policy does not answer; an MCP client
reads the open questions and answers one with an option's id (or text), whichever Relay
process runs the session.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from relay.core.events import NeedsInput
from relay.engine.engine import Engine
from relay.mcp.approval import READS, RUNS_AGENTS
from relay.mcp.results import find_session, guarded, ok
from relay.mcp.session_tools import SessionId


class OpenQuestions(BaseModel):
    session_id: str
    questions: list[NeedsInput]


class Answered(BaseModel):
    session_id: str
    request_id: str
    message: str


def question_text(q: NeedsInput) -> str:
    options = ", ".join(f"{o.id} ({o.label})" for o in q.options) or "free text"
    tool = f" [{q.tool}]" if q.tool else ""
    return f"{q.request_id}{tool}: {q.prompt} — answer with: {options}"


class QuestionTools:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def register(self, server: MCPServer) -> None:
        server.add_tool(self.open_questions, name="relay_open_questions",
                        title="What a session's agent asks",
                        annotations=READS)
        # an answer can allow the agent's tool call: whatever that call does
        server.add_tool(self.answer, name="relay_answer", title="Answer a session's agent",
                        annotations=RUNS_AGENTS)

    @guarded
    async def open_questions(self, session_id: SessionId,
                             ) -> Annotated[CallToolResult, OpenQuestions]:
        """The questions a session's agent asks that nobody has answered yet (a permission
        for a tool call, or a question), each with its request id and options."""
        row = await find_session(self.engine, session_id)
        asked = await self.engine.open_questions(row.id)
        text = "\n".join(question_text(q) for q in asked) or f"Session {row.id} asks nothing."
        return ok(OpenQuestions(session_id=row.id, questions=asked), text)

    @guarded
    async def answer(
        self,
        session_id: SessionId,
        request_id: Annotated[str, Field(min_length=1, description=(
            "The question's request id, from relay_open_questions."))],
        option: Annotated[str | None, Field(description=(
            "The id of the option to pick (e.g. allow, reject).")),
        ] = None,
        text: Annotated[str | None, Field(description=(
            "A free-text answer, for a question without options.")),
        ] = None,
    ) -> Annotated[CallToolResult, Answered]:
        """Answer a question a session's agent asks; the agent goes on at once. Works for a
        session any Relay process runs."""
        row = await find_session(self.engine, session_id)
        said = await self.engine.answer_input(row.id, request_id, option, text)
        return ok(Answered(session_id=row.id, request_id=request_id, message=said), said)
