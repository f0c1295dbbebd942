"""The Detector reads the hooks' live states first (exact), transcripts stay the fallback."""

from __future__ import annotations

from pathlib import Path

from relay.board.hooks import LiveTable
from relay.core.live import HookedSession, LiveState, Needs
from relay.detect.present import state_sentence
from relay.detect.service import Detector
from relay.engine.engine import Engine
from tests.conftest import make_repo
from tests.detect.conftest import no_processes
from tests.detect.test_service import LIMITED, claude_folder


def hooked(state: LiveState, needs: Needs | None = None, detail: str = "") -> HookedSession:
    return HookedSession(agent_session_id=LIMITED, runtime="claude", cwd="", state=state,
                         needs=needs, detail=detail, started_ms=1, updated_ms=2)


async def scan_state(engine: Engine, tmp_path: Path, live: LiveTable) -> tuple[str, bool, str]:
    detector = Detector(engine.accounts, engine.wallet, process_scan=no_processes, live=live)
    report = await detector.scan(all_sessions=True)
    found = next(s for s in report.sessions if s.agent_session_id == LIMITED)
    return found.state, found.hooked, state_sentence(found, 0)


async def test_the_hook_state_comes_first(engine: Engine, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    await engine.accounts.add("claude", "work", claude_folder(tmp_path, repo))
    live = LiveTable()
    assert (await scan_state(engine, tmp_path, live))[:2] == ("blocked", False)  # transcript
    live.put(hooked("needs_input", "permission", "Claude needs your permission to use Bash"))
    state, exact, sentence = await scan_state(engine, tmp_path, live)
    assert (state, exact) == ("needs_input", True)
    assert "waits for a permission" in sentence
    assert "use Bash" in sentence
    live.put(hooked("quota_blocked", detail="usage limit"))
    assert (await scan_state(engine, tmp_path, live))[:2] == ("blocked", True)
    live.put(hooked("ended"))
    assert (await scan_state(engine, tmp_path, live))[:2] == ("ended", True)


async def test_the_engines_detector_reads_the_boards_live_states(engine: Engine,
                                                                 tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    await engine.accounts.add("claude", "work", claude_folder(tmp_path, repo))
    await engine.board.hook({"session_id": LIMITED, "hook_event_name": "Notification",
                             "cwd": str(repo), "message": "Claude is waiting for your input",
                             "notification_type": "idle_prompt"})
    assert engine.detector.live.get(LIMITED) is not None
    engine.detector._process_scan = no_processes
    report = await engine.detector.scan(all_sessions=True)
    found = next(s for s in report.sessions if s.agent_session_id == LIMITED)
    assert (found.state, found.hooked) == ("idle", True)
