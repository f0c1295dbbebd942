"""The project stands on its own: a clone with nothing beside it sets up, demos and tests.

What is checked here: the recorded fixtures live in the repository and nothing reads a
folder outside it; a missing or partial fixture folder is one clear line; the window's
dependencies are not optional; ``./dev``'s system-library check cannot race, never kills
the demo, and says in one line what an install that failed did.
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import psutil
import pytest

from tests.conftest import REPO_ROOT, wait_until
from tests.fakes.replay import FIXTURE_RUNTIMES, FIXTURES_DIR, fixtures_problem

OUTSIDE = "../" + "shared"  # spelled apart so this file does not match itself
OUTSIDE_FIXTURES = "shared" + "/fixtures"
CHECKED = ["app", "tests", "benchmarks", "scripts", "installers", ".ci", ".github"]
CHECKED_FILES = ["dev", "pyproject.toml", "README.md"]


def _project_files() -> list[Path]:
    found = [REPO_ROOT / name for name in CHECKED_FILES]
    for top in CHECKED:
        for path in (REPO_ROOT / top).rglob("*"):
            if (path.is_file() and FIXTURES_DIR not in path.parents and "__pycache__" not in path.parts
                    and ".egg-info" not in str(path)):
                found.append(path)
    return found


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return ""


# --- the fixtures ----------------------------------------------------------------------

def test_nothing_reads_a_folder_beside_the_repository() -> None:
    offenders = [
        f"{path.relative_to(REPO_ROOT)}:{n}"
        for path in _project_files()
        for n, line in enumerate(_text(path).splitlines(), 1)
        if OUTSIDE in line or re.search(rf"(?<!tests/){re.escape(OUTSIDE_FIXTURES)}", line)
    ]
    assert not offenders, offenders


def test_every_cited_recording_names_the_in_repo_copy() -> None:
    """A docstring or doc that cites a CLI's NOTES.md names it as tests/fixtures/<cli>/NOTES.md."""
    cited = re.compile(r"([\w./-]*?)\b(" + "|".join(FIXTURE_RUNTIMES) + r")/NOTES\.md")
    wrong = []
    for path in [*_project_files(), *(REPO_ROOT / "docs").rglob("*.md")]:
        if path == Path(__file__):
            continue
        for n, line in enumerate(_text(path).splitlines(), 1):
            for match in cited.finditer(line):
                if not match.group(1).endswith("tests/fixtures/"):
                    wrong.append(f"{path.relative_to(REPO_ROOT)}:{n}: {match.group(0)}")
    assert not wrong, wrong
    assert any("tests/fixtures/claude/NOTES.md" in _text(p) for p in (REPO_ROOT / "app").rglob("*.py"))


def test_the_repository_carries_the_recordings_with_their_notes() -> None:
    assert fixtures_problem(FIXTURES_DIR) is None
    assert (FIXTURES_DIR / "README.md").read_text(encoding="utf-8").startswith("# Recorded output")
    for runtime in FIXTURE_RUNTIMES:
        assert any((FIXTURES_DIR / runtime / "captures").iterdir()), runtime


def test_a_missing_fixture_folder_is_named(tmp_path: Path) -> None:
    problem = fixtures_problem(tmp_path / "nowhere")
    assert problem is not None
    assert "not found" in problem
    assert str(tmp_path / "nowhere") in problem
    assert "\n" not in problem


def test_a_partial_fixture_folder_names_what_is_missing(tmp_path: Path) -> None:
    root = tmp_path / "fixtures"
    shutil.copytree(FIXTURES_DIR / "pi", root / "pi")
    problem = fixtures_problem(root)
    assert problem is not None
    assert "incomplete" in problem
    for part in ("README.md", "claude/NOTES.md", "codex/captures", "gemini/NOTES.md"):
        assert part in problem
    assert "pi/" not in problem


def test_pytest_stops_with_one_line_when_the_fixtures_are_missing(tmp_path: Path) -> None:
    env = {**os.environ, "RELAY_FIXTURES": str(tmp_path / "gone")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--collect-only", "tests/test_layering.py"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out
    assert f"recorded fixtures not found at {tmp_path / 'gone'}" in out


# --- the window's dependencies ----------------------------------------------------------

def _third_party_imports() -> set[str]:
    names: set[str] = set()
    stdlib = set(sys.stdlib_module_names)
    for path in (REPO_ROOT / "app" / "relay").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                tops = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                tops = [node.module.split(".")[0]]
            else:
                continue
            names.update(t for t in tops if t not in stdlib and t != "relay")
    return names


def test_every_library_relay_imports_is_a_required_dependency() -> None:
    """`pip install relay` gives a working window and CLI: no import needs an extra."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    required = {re.split(r"[<>=!~ \[;]", dep, maxsplit=1)[0].lower().replace("_", "-")
                for dep in project["dependencies"]}
    providers = importlib.metadata.packages_distributions()
    missing = {}
    for module in sorted(_third_party_imports()):
        dists = {d.lower().replace("_", "-") for d in providers.get(module, [])}
        if not dists & required and not any(_required_through(d, required) for d in dists):
            missing[module] = sorted(dists)
    assert not missing, f"imported but not in [project.dependencies]: {missing}"
    assert {"pyside6-essentials", "qasync"} <= required


def _required_through(dist: str, required: set[str]) -> bool:
    """True when ``dist`` is itself a dependency of a required distribution (shiboken6)."""
    for name in required:
        try:
            reqs = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        if any(re.split(r"[<>=!~ \[;]", r, maxsplit=1)[0].lower().replace("_", "-") == dist
               for r in reqs if "extra ==" not in r):
            return True
    return False


# --- ./dev ------------------------------------------------------------------------------

def _dev_qt_libs() -> list[str]:
    """The libraries ``./dev`` checks for (its QT_LIBS, ``library:package`` pairs)."""
    out = subprocess.run(["bash", "-c", 'source ./dev; printf "%s\\n" "${QT_LIBS[@]}"'], cwd=REPO_ROOT,
                         capture_output=True, text=True, check=True).stdout
    return [pair.partition(":")[0] for pair in out.split()]


QT_LIBS = _dev_qt_libs()


def _script(path: Path, body: str) -> None:
    path.write_text("#!/usr/bin/env bash\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _fake_tools(tmp_path: Path, libs: list[str], apt_exit: int) -> tuple[Path, Path]:
    """A bin folder with an ``ldconfig -p`` listing ``libs`` then 400,000 other lines (far
    more than a pipe holds, so a reader that stops early makes it die of SIGPIPE) and an
    ``apt-get`` that logs its arguments and exits ``apt_exit``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    listed = "".join(f"\\t{lib} (libc6,x86-64) => /lib/x86_64-linux-gnu/{lib}\\n" for lib in libs)
    _script(bin_dir / "ldconfig",
            f'printf "548 libs found in cache\\n{listed}"\n'
            'for i in $(seq 1 400000); do echo "	libfiller$i.so.1 (libc6,x86-64) => /x/libfiller$i.so.1"; '
            "done\n")
    apt_log = tmp_path / "apt.log"
    _script(bin_dir / "apt-get",
            f'echo "$*" >> {apt_log}\n'
            'echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242" >&2\n'
            f"exit {apt_exit}\n")
    _script(bin_dir / "id", 'if [ "${1:-}" = -u ]; then echo 0; else /usr/bin/id "$@"; fi\n')
    return bin_dir, apt_log


def _dev(bin_dir: Path, call: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **env}
    return subprocess.run(["bash", "-c", f"source ./dev; {call}"], cwd=REPO_ROOT, env=full_env,
                          capture_output=True, text=True, check=False, timeout=120)


def test_present_qt_libraries_are_never_reported_missing(tmp_path: Path) -> None:
    bin_dir, apt_log = _fake_tools(tmp_path, QT_LIBS, apt_exit=0)
    for _ in range(3):
        proc = _dev(bin_dir, "missing_qt_packages; need_system_libs; echo rc=$?")
        assert proc.stdout.strip() == "rc=0", proc.stdout + proc.stderr
    assert not apt_log.exists(), apt_log.read_text()


def test_only_the_missing_libraries_are_installed(tmp_path: Path) -> None:
    bin_dir, apt_log = _fake_tools(tmp_path, [lib for lib in QT_LIBS if lib != "libGL.so.1"], 0)
    proc = _dev(bin_dir, "need_system_libs; echo rc=$?")
    assert proc.stdout.strip() == "rc=0", proc.stderr
    installs = [line for line in apt_log.read_text().splitlines() if " install " in f" {line} "]
    assert len(installs) == 1
    assert installs[0].split()[-1] == "libgl1"
    assert "libegl1" not in installs[0]


def test_a_failed_install_is_one_line_and_not_the_end(tmp_path: Path) -> None:
    bin_dir, _ = _fake_tools(tmp_path, [], apt_exit=100)
    proc = _dev(bin_dir, "need_system_libs; echo rc=$?")
    assert proc.stdout.strip() == "rc=0"
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 2, lines  # "installing …" and what went wrong
    assert "[dev]" in lines[-1]
    assert "failed" in lines[-1]
    assert "Could not get lock" in lines[-1]


def test_a_background_step_is_summarised_and_ended_with_dev(tmp_path: Path) -> None:
    """``./dev test`` builds the bundle in the background: its status and time join the
    summary, a failure shows the end of its log, and ./dev ending early ends it too."""
    log = tmp_path / "bg.log"
    summary = 'printf "%s\\n" "${STEP_LINES[@]}" "${STEP_FAILED[@]}"'
    proc = _dev(tmp_path, f"bg_step built {log} bash -c 'echo step-output; exit 3'; "
                f'bg_wait || echo "rc=$?"; {summary}')
    lines = proc.stdout.splitlines()
    assert lines[0] == "rc=3", proc.stdout + proc.stderr
    assert lines[1].split()[0] == "FAILED"
    assert lines[1].endswith("built (beside the steps before) (exit 3)")
    assert lines[2] == "built"
    assert "step-output" in proc.stderr  # the end of its log, above the summary
    done = _dev(tmp_path, f"bg_step built {log} true; bg_wait && {summary}")
    assert done.stdout.split()[0] == "ok", done.stdout + done.stderr
    left = _dev(tmp_path, f'bg_step slow {log} sleep 300; echo "$BG_PID"; exit 0')
    assert left.returncode == 0, left.stderr
    pid = int(left.stdout)

    def ended() -> bool:  # ./dev's EXIT trap ended it (a zombie until init reaps it)
        try:
            return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
        except psutil.NoSuchProcess:
            return True

    wait_until(ended, what="the background step to end with ./dev")


def _fake_venv(tmp_path: Path) -> Path:
    """A venv folder whose python and relay-cli are this interpreter (no pip run needed)."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    launch = "import sys; from relay.cli.main import main; sys.exit(main())"
    _script(venv / "bin" / "relay-cli", f'exec {sys.executable} -c "{launch}" "$@"\n')
    (venv / ".relay-installed").touch()
    return venv


def test_dev_run_without_a_display_runs_the_terminal_demo_whatever_apt_says(tmp_path: Path) -> None:
    bin_dir, apt_log = _fake_tools(tmp_path, [], apt_exit=100)
    venv = _fake_venv(tmp_path)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "RELAY_VENV": str(venv),
           "RELAY_DEMO_STEP_DELAY": "0", "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "RELAY_VAULT_PASSPHRASE"):
        env.pop(name, None)
    proc = subprocess.run([str(REPO_ROOT / "dev"), "run"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, check=False, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "running the demo in the terminal" in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert not apt_log.exists()  # the terminal demo needs no Qt library


def test_the_ci_script_runs_the_readme_test_command() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Quick start", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["./dev run", "./dev test"]
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "exec ./dev test" in ci


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the xcb plugin is Linux's")
def test_the_window_s_x11_plugin_finds_every_library_it_needs() -> None:
    """``./dev`` installs what Qt's xcb plugin links (a window under Xvfb or a real X display)."""
    import PySide6

    qt = Path(PySide6.__file__).parent / "Qt"
    missing = set()
    for lib in (qt / "plugins" / "platforms" / "libqxcb.so", qt / "lib" / "libQt6XcbQpa.so.6"):
        out = subprocess.run(["ldd", str(lib)], capture_output=True, text=True, check=True).stdout
        missing |= {line.split()[0] for line in out.splitlines() if "not found" in line}
    assert not missing, f"not installed: {sorted(missing)}"
