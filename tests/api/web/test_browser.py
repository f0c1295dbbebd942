"""The web board in a real headless chromium against a real ``relay-cli serve`` on a real
socket: sign in through the one-time link, watch a task move when an agent's MCP call (the
SDK's client at ``/mcp``) changes its stage, write a comment the agent then reads, see an
agent's HTML shown as text, and the phone layout. Screenshots go to /tmp/web-shots/."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import httpx

try:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver import Chrome
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # chromium() fails the test with what to install
    pass

from relay.api.client import RelayClient
from relay.core.events import NeedsInput
from relay.core.hostfile import read_host, read_token
from relay.core.models import SessionSpec
from tests.api.test_mcp_http import mcp_session
from tests.api.web.browser import chromium, console, executables, shoot, viewport
from tests.api.web.conftest import SCRIPT
from tests.mcp.conftest import call

WAIT_S = 30


def mcp(url: str, token: str, tool: str, **arguments: Any) -> dict[str, Any]:
    """One MCP tool call, as an agent makes it: the SDK's client over Streamable HTTP."""
    async def calling() -> dict[str, Any]:
        async with mcp_session(url, token) as session:
            return await call(session, tool, **arguments)
    return asyncio.run(calling())


def hook(url: str, token: str, event: dict[str, Any]) -> None:
    """A Claude Code hook event, as the hook client posts it."""
    r = httpx.post(f"{url}/api/v1/hooks/claude", json=event, trust_env=False,
                   headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200, r.text


def busy_demo(relay_home: Path, repo: Path) -> str:
    """A demo session in the host that waits for an answer (busy until then)."""
    async def starting() -> str:
        client = RelayClient.for_home(relay_home)
        assert client is not None
        async with client:
            sid = await client.start_session(SessionSpec(repo=repo, task="notes",
                                                         runtime="demo", demo_ask=True,
                                                         approvals="ask"))
            async for record in client.follow(sid):
                if isinstance(record.event, NeedsInput):
                    return sid
        raise AssertionError("the demo ended without asking")
    return asyncio.run(starting())


def say(relay_home: Path, sid: str, text: str) -> None:
    """A message from another client (relay-cli, the window…) through the host's API."""
    async def saying() -> None:
        client = RelayClient.for_home(relay_home)
        assert client is not None
        async with client:
            await client.talk.say(sid, text, source="cli")
    asyncio.run(saying())


def wait(web: Chrome) -> WebDriverWait[Chrome]:
    return WebDriverWait(web, WAIT_S)


def column_of(web: Chrome, key: str) -> str:
    card = web.find_element(By.ID, f"card-{key}")
    return str(card.find_element(By.XPATH, "./ancestor::section[@data-stage]")
               .get_attribute("data-stage"))


def no_alert(web: Chrome) -> None:
    try:
        text = web.switch_to.alert.text
    except NoAlertPresentException:
        return
    raise AssertionError(f"the page opened an alert: {text!r}")


def test_the_board_in_a_real_browser(host_proc: subprocess.Popen[str], relay_home: Path,
                                     git_repo: Path, tmp_path: Path) -> None:
    executables()  # first: what is missing fails the test before anything runs
    info, token = read_host(relay_home), read_token(relay_home)
    assert info is not None
    assert token
    url = info.url.rstrip("/")
    task = mcp(url, token, "board_task_create", repo=str(git_repo), title="Ship the web board",
               stage="dev", next_step="watch it in a browser")["task"]
    key = task["key"]
    mcp(url, token, "board_report", key=key, summary=SCRIPT, body="details: " + SCRIPT)
    claude = "0b5e7c1a-web-board-test"
    hook(url, token, {"session_id": claude, "hook_event_name": "SessionStart",
                      "cwd": str(git_repo), "source": "startup"})
    mcp(url, token, "board_link", key=key, session_id=claude)
    link = httpx.post(f"{url}/api/v1/board/login-link", trust_env=False,
                      headers={"Authorization": f"Bearer {token}"}).json()["url"]

    with chromium(tmp_path) as web:
        # signed out: the page says how to sign in, and nothing of the board
        web.get(f"{url}/board")
        assert "relay-cli board --open" in web.find_element(By.TAG_NAME, "body").text
        assert key not in web.page_source
        shoot(web, "desktop-signed-out")
        # the one-time link signs in and lands on the board, live
        web.get(link)
        wait(web).until(ec.url_to_be(f"{url}/board"))
        wait(web).until(ec.presence_of_element_located((By.ID, f"card-{key}")))
        wait(web).until(ec.text_to_be_present_in_element((By.ID, "live"), "live"))
        assert column_of(web, key) == "dev"
        assert web.get_cookie("relay_board")["httpOnly"]  # type: ignore[index]
        console(web)  # from here on, nothing may go wrong in the page
        shoot(web, "desktop-board")

        # an agent moves the task: the card moves without a reload
        marker = web.find_element(By.TAG_NAME, "body")
        mcp(url, token, "board_set_stage", key=key, stage="test", note="ready to test")
        wait(web).until(lambda w: column_of(w, key) == "test")
        assert marker.is_displayed()  # the same page: nothing reloaded it

        # the linked session asks for a permission: its card says so, live
        card = f"#card-{key}"
        assert not web.find_elements(By.CSS_SELECTOR, f"{card} .needs-input")
        hook(url, token, {"session_id": claude, "hook_event_name": "Notification",
                          "cwd": str(git_repo), "notification_type": "permission_prompt",
                          "message": "Claude needs your permission to use Bash"})
        wait(web).until(ec.presence_of_element_located((By.CSS_SELECTOR,
                                                        f"{card} .badge.needs-input")))
        state = web.find_element(By.CSS_SELECTOR, f"{card} .sessions .state")
        assert state.text == "needs input"

        # the task page: the agent's HTML is text, and no script ran
        shoot(web, "desktop-board-moved")
        web.find_element(By.CSS_SELECTOR, f"#card-{key} a.key").click()
        wait(web).until(ec.presence_of_element_located((By.ID, "task")))
        report = web.find_element(By.CSS_SELECTOR, "#reports .report-entry")
        assert report.find_element(By.CSS_SELECTOR, ".summary").text == SCRIPT
        assert report.find_element(By.CSS_SELECTOR, ".body").text == "details: " + SCRIPT
        assert web.find_elements(By.CSS_SELECTOR, "#reports img, #reports script") == []
        assert web.find_elements(By.CSS_SELECTOR, "#card-" + key + " img") == []
        no_alert(web)

        # a comment through the form shows in the list, and reaches the agent's tool
        box = web.find_element(By.ID, "comment-body")
        box.send_keys("Please add a phone screenshot <b>too</b>")
        web.find_element(By.CSS_SELECTOR, ".comment-form button[type=submit]").click()
        wait(web).until(ec.text_to_be_present_in_element(
            (By.ID, "comments"), "Please add a phone screenshot <b>too</b>"))
        wait(web).until(lambda w: w.find_element(By.ID, "comment-body")
                        .get_attribute("value") == "")
        comments = mcp(url, token, "board_comments", key=key)["comments"]
        assert [c["body"] for c in comments] == ["Please add a phone screenshot <b>too</b>"]
        # a Relay session linked to the task: its composer queues a message for its turn's
        # end, and one another client sends shows up (the queue is polled)
        sid = busy_demo(relay_home, git_repo)
        mcp(url, token, "board_link", key=key, session_id=sid)
        web.get(f"{url}/board/t/{key}")
        composer = wait(web).until(ec.presence_of_element_located((By.ID, f"talk-text-{sid}")))
        composer.send_keys("Also add a changelog")
        web.find_element(By.CSS_SELECTOR, f"#talk-{sid} button[value=queue]").click()
        queue = (By.ID, f"talk-queue-{sid}")
        wait(web).until(ec.text_to_be_present_in_element(queue, "Also add a changelog"))
        wait(web).until(lambda w: w.find_element(By.ID, f"talk-text-{sid}")
                        .get_attribute("value") == "")
        say(relay_home, sid, "sent from the terminal")
        wait(web).until(ec.text_to_be_present_in_element(queue, "sent from the terminal"))
        shoot(web, "desktop-composer")
        # the stage form moves it as the owner; the agent's next move shows on the task page
        mcp(url, token, "board_set_stage", key=key, stage="live")
        wait(web).until(ec.text_to_be_present_in_element(
            (By.CSS_SELECTOR, "#task .task-head .stage"), "live"))
        web.execute_script("window.scrollTo(0, 0)")
        shoot(web, "desktop-task")
        severe = [e for e in console(web) if e["level"] == "SEVERE"]
        assert severe == [], "\n".join(e["message"] for e in severe)  # no CSP violation

        # a phone: one column at a time, picked with the stage tabs
        viewport(web, 390, 844, mobile=True)
        web.get(f"{url}/board")
        wait(web).until(ec.presence_of_element_located((By.ID, f"card-{key}")))
        tabs = web.find_element(By.CSS_SELECTOR, ".tabs")
        assert tabs.is_displayed()
        shown = [s.get_attribute("data-stage") for s in web.find_elements(By.CSS_SELECTOR, ".col")
                 if s.is_displayed()]
        assert shown == ["live"]  # the first non-empty stage from dev on
        web.find_element(By.CSS_SELECTOR, "label[for=tab-plan]").click()
        wait(web).until(lambda w: w.find_element(By.CSS_SELECTOR, ".col-plan").is_displayed())
        assert not web.find_element(By.ID, f"card-{key}").is_displayed()
        web.find_element(By.CSS_SELECTOR, "label[for=tab-live]").click()
        wait(web).until(lambda w: w.find_element(By.ID, f"card-{key}").is_displayed())
        assert web.execute_script("return document.documentElement.scrollWidth") <= 390
        shoot(web, "phone-board")
        web.find_element(By.CSS_SELECTOR, f"#card-{key} a.key").click()
        wait(web).until(ec.presence_of_element_located((By.ID, "task")))
        assert web.execute_script("return document.documentElement.scrollWidth") <= 390
        shoot(web, "phone-task")
        no_alert(web)
