"""A real headless browser for the web board's test: Debian's chromium driven by selenium
through chromedriver. Nothing is downloaded (Selenium Manager never runs: the driver's and the
browser's paths are given); a missing piece **fails** the test with what to install, like the
integration tier's real CLIs (tests/integration/helpers.py). ``RELAY_CHROMIUM`` and
``RELAY_CHROMEDRIVER`` name other executables."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from selenium.webdriver import Chrome

#: where the screenshots go (the test writes them for a person to look at)
SHOTS = Path(os.environ.get("RELAY_WEB_SHOTS", "/tmp/web-shots"))
CHROMIUM = ("chromium", "chromium-browser")
DRIVER = "chromedriver"


def _which(env: str, *names: str) -> str | None:
    if given := os.environ.get(env):
        return given if os.access(given, os.X_OK) else None
    return next((path for name in names if (path := shutil.which(name))), None)


def executables() -> tuple[str, str]:
    """chromium's and chromedriver's paths, with selenium importable; fails the test with
    what to install otherwise."""
    browser, driver = _which("RELAY_CHROMIUM", *CHROMIUM), _which("RELAY_CHROMEDRIVER", DRIVER)
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.fail("selenium is not installed: `pip install -e '.[dev]'` (./dev test does).",
                    pytrace=False)
    if browser is None or driver is None:
        pytest.fail("the web board's browser test needs Debian's chromium and chromedriver "
                    f"(found: chromium {browser or 'no'}, chromedriver {driver or 'no'}): "
                    "`apt-get install chromium chromium-driver` (./dev test installs them), or "
                    "set RELAY_CHROMIUM / RELAY_CHROMEDRIVER.", pytrace=False)
    return browser, driver


@contextmanager
def chromium(tmp: Path, width: int = 1280, height: int = 800) -> Iterator[Chrome]:
    """A headless chromium of its own profile in ``tmp``, closed after the block."""
    browser, driver = executables()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                f"--user-data-dir={tmp / 'chromium-profile'}",
                f"--window-size={width},{height}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    web = webdriver.Chrome(service=Service(driver, log_output=str(tmp / "chromedriver.log")),
                           options=options)
    try:
        web.set_page_load_timeout(30)
        viewport(web, width, height)
        yield web
    finally:
        web.quit()


def viewport(web: Chrome, width: int, height: int, *, mobile: bool = False) -> None:
    """Exactly this viewport (a window's size would include what the browser draws around
    it); ``mobile``: as a phone lays out (the page's viewport meta counts)."""
    web.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                        {"width": width, "height": height, "deviceScaleFactor": 1,
                         "mobile": mobile})


def console(web: Chrome) -> list[dict[str, Any]]:
    """What the page logged since the last call (errors, CSP violations, failed loads)."""
    entries: list[dict[str, Any]] = web.get_log("browser")  # type: ignore[no-untyped-call]
    return entries


def shoot(web: Chrome, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    assert web.save_screenshot(str(path)), path
    return path
