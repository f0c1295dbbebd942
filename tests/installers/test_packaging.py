"""The per-OS packaging sources: .desktop, Debian control, Inno Setup, PowerShell, shell, CI."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.installers.helpers import INSTALLERS, REPO

DESKTOP = INSTALLERS / "linux" / "relay.desktop"
CONTROL = INSTALLERS / "linux" / "control.in"
LINUX_BUILD = INSTALLERS / "linux" / "build.sh"
ISS = INSTALLERS / "windows" / "relay.iss"
BUILD_PS1 = INSTALLERS / "windows" / "build.ps1"
CHECK_PS1 = INSTALLERS / "windows" / "check-install.ps1"
MAC_BUILD = INSTALLERS / "macos" / "build.sh"
WORKFLOW = REPO / ".github" / "workflows" / "installers.yml"
SHELL_SCRIPTS = sorted(INSTALLERS.rglob("*.sh"))
# the developer entry point and CI's script are shell too, and as exposed
PROJECT_SCRIPTS = [REPO / "dev", REPO / ".ci" / "run", *sorted((REPO / "scripts").glob("*.sh"))]


# --- Linux ------------------------------------------------------------------------------

def test_desktop_entry_fields() -> None:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read(DESKTOP, encoding="utf-8")
    entry = parser["Desktop Entry"]
    assert entry["Type"] == "Application"
    assert entry["Exec"].split()[0] == "relay"  # /usr/bin/relay, the .deb's symlink
    assert entry["Icon"] == "relay"  # hicolor/<size>/apps/relay.png|svg
    assert entry["Terminal"] == "false"
    assert entry["StartupWMClass"] == "relay"  # QApplication.setDesktopFileName("relay")
    assert "Development" in entry["Categories"].split(";")


def test_desktop_entry_validates() -> None:
    validator = shutil.which("desktop-file-validate")
    assert validator is not None, "desktop-file-validate missing (./dev test installs desktop-file-utils)"
    proc = subprocess.run([validator, str(DESKTOP)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not proc.stdout.strip(), proc.stdout  # no warnings either


def render_control(depends: str = "libc6 (>= 2.36), libxcb-cursor0") -> str:
    values = {"VERSION": "1.2.3", "ARCH": "amd64", "INSTALLED_SIZE": "1234", "DEPENDS": depends}
    return re.sub(r"@([A-Z_]+)@", lambda m: values[m.group(1)], CONTROL.read_text(encoding="utf-8"))


def test_control_template_placeholders_match_build_sh() -> None:
    in_template = set(re.findall(r"@([A-Z_]+)@", CONTROL.read_text(encoding="utf-8")))
    filled = set(re.findall(r"s/@([A-Z_]+)@/", LINUX_BUILD.read_text(encoding="utf-8")))
    assert in_template == filled == {"VERSION", "ARCH", "INSTALLED_SIZE", "DEPENDS"}


def test_control_fields() -> None:
    text = render_control()
    fields = dict(re.findall(r"^([A-Za-z-]+): (.*)$", text, flags=re.M))
    for name in ("Package", "Version", "Architecture", "Maintainer", "Installed-Size", "Depends",
                 "Section", "Priority", "Description"):
        assert fields.get(name), name
    assert fields["Package"] == "relay"
    assert len(fields["Description"]) <= 80  # the synopsis line
    body = text.split("Description:", 1)[1].splitlines()[1:]
    assert body
    assert all(line.startswith(" ") for line in body if line)


def test_dpkg_deb_accepts_the_control_file(tmp_path: Path) -> None:
    dpkg_deb = shutil.which("dpkg-deb")
    if dpkg_deb is None:
        pytest.skip("dpkg-deb not installed")
    root = tmp_path / "root"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(render_control(), encoding="utf-8")
    (root / "opt" / "relay").mkdir(parents=True)
    (root / "opt" / "relay" / "README").write_text("x\n", encoding="utf-8")
    deb = tmp_path / "relay.deb"
    subprocess.run([dpkg_deb, "--root-owner-group", "--build", str(root), str(deb)],
                   capture_output=True, text=True, check=True)
    info = subprocess.run([dpkg_deb, "--field", str(deb), "Package", "Version", "Depends"],
                          capture_output=True, text=True, check=True).stdout
    assert "Package: relay" in info
    assert "Version: 1.2.3" in info
    assert "libxcb-cursor0" in info


def test_deb_layout_in_build_sh() -> None:
    text = LINUX_BUILD.read_text(encoding="utf-8")
    for needle in ('"$root/opt/relay"', "ln -s /opt/relay/relay ", "ln -s /opt/relay/relay-cli ",
                   "usr/share/applications/relay.desktop", "hicolor/256x256/apps/relay.png",
                   "hicolor/scalable/apps/relay.svg", "dpkg-shlibdeps", "dpkg-deb --root-owner-group"):
        assert needle in text, needle


@pytest.mark.parametrize("script", SHELL_SCRIPTS, ids=lambda p: str(p.relative_to(INSTALLERS)))
def test_shell_scripts_parse(script: Path) -> None:
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert script.stat().st_mode & 0o111, f"{script} is not executable"


def _shellcheck() -> str:
    shellcheck = shutil.which("shellcheck")
    # ./dev test installs it (Debian: shellcheck): missing here is a broken setup, not a skip
    assert shellcheck is not None, "shellcheck not installed (./dev test installs it; Debian: shellcheck)"
    return shellcheck


@pytest.mark.parametrize("script", SHELL_SCRIPTS, ids=lambda p: str(p.relative_to(INSTALLERS)))
def test_shellcheck(script: Path) -> None:
    # -x from the repository root: the scripts source installers/common.bash
    proc = subprocess.run([_shellcheck(), "-x", str(script), str(INSTALLERS / "common.bash")],
                          capture_output=True, text=True, check=False, cwd=REPO)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.parametrize("script", PROJECT_SCRIPTS, ids=lambda p: str(p.relative_to(REPO)))
def test_shellcheck_project_scripts(script: Path) -> None:
    proc = subprocess.run([_shellcheck(), "-x", str(script)], capture_output=True, text=True,
                          check=False, cwd=REPO)
    assert proc.returncode == 0, proc.stdout


# --- Windows ----------------------------------------------------------------------------

def iss_sections() -> dict[str, str]:
    text = ISS.read_text(encoding="utf-8")
    parts = re.split(r"^\[(\w+)\]\s*$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_iss_puts_relay_cli_on_path_and_takes_it_off_again() -> None:
    sections = iss_sections()
    text = ISS.read_text(encoding="utf-8")
    assert "relay-cli" in text
    assert re.search(r'^Name: "addtopath";.*relay-cli', sections["Tasks"], flags=re.M)
    code = sections["Code"]
    assert re.search(r"WizardIsTaskSelected\('addtopath'\)\s*then\s*AddToPath\(ExpandConstant\('\{app\}'\)\)",
                     code)
    uninstall = code[code.index("procedure CurUninstallStepChanged"):]
    assert "RemoveFromPath(ExpandConstant('{app}'))" in uninstall
    assert "RegWriteExpandStringValue" in code  # keeps %SystemRoot%-style entries working
    assert "ChangesEnvironment=yes" in sections["Setup"]
    # never delete the whole Path value on uninstall
    assert "uninsdeletevalue" not in text.lower()


def test_iss_pascal_blocks_balance() -> None:
    code = re.sub(r"\{[^}]*\}|'[^']*'", "", iss_sections()["Code"])  # drop comments and strings
    words = re.findall(r"\b(begin|end)\b", code, flags=re.I)
    assert words.count("begin") == words.count("end") > 0


def test_iss_shortcuts_and_tasks() -> None:
    sections = iss_sections()
    assert re.search(r'^Name: "\{autoprograms\}\\Relay"; Filename: "\{app\}\\relay\.exe"',
                     sections["Icons"], flags=re.M)
    assert re.search(r'^Name: "\{autodesktop\}\\Relay";.*Tasks: desktopicon', sections["Icons"], flags=re.M)
    assert re.search(r'^Name: "desktopicon";.*Flags: unchecked', sections["Tasks"], flags=re.M)
    assert re.search(r"^AppId=\{\{[0-9A-F-]{36}\}", sections["Setup"], flags=re.M)
    assert 'Source: "{#BundleDir}\\*"' in sections["Files"]


def test_build_ps1_defines_what_the_iss_expects() -> None:
    iss = ISS.read_text(encoding="utf-8")
    ps1 = BUILD_PS1.read_text(encoding="utf-8")
    passed = set(re.findall(r'"/D(\w+)=', ps1))
    declared = set(re.findall(r"^#ifndef (\w+)", iss, flags=re.M))
    assert passed == declared == {"AppVersion", "BundleDir", "IconFile", "OutputDir"}
    # the installer's file name, as the build script and the install check look for it
    assert "OutputBaseFilename=relay-{#AppVersion}-windows-x64-setup" in iss
    assert 'relay-$Version-windows-x64-setup.exe' in ps1
    assert "relay-*-windows-x64-setup.exe" in CHECK_PS1.read_text(encoding="utf-8")


@pytest.mark.parametrize("script", [BUILD_PS1, CHECK_PS1], ids=lambda p: p.name)
def test_powershell_brackets_balance(script: Path) -> None:
    text = re.sub(r"(?m)#(?!>).*$", "", script.read_text(encoding="utf-8"))
    text = re.sub(r'"(?:`.|[^"`])*"|\'[^\']*\'', '""', text)  # strings may hold brackets
    for open_, close in ("{}", "()", "[]"):
        assert text.count(open_) == text.count(close), f"{script.name}: {open_}{close}"
    assert "$ErrorActionPreference = \"Stop\"" in script.read_text(encoding="utf-8")


def test_build_ps1_runs_the_spec_the_smoke_test_and_iscc() -> None:
    ps1 = BUILD_PS1.read_text(encoding="utf-8")
    for needle in ("installers\\relay.spec", "installers\\smoke.py", "installers\\windows\\relay.iss",
                   "installers\\icons.py", "RELAY_ICON_ICO", "ISCC.exe"):
        assert needle in ps1, needle


# --- macOS ------------------------------------------------------------------------------

def test_macos_build_script() -> None:
    text = MAC_BUILD.read_text(encoding="utf-8")
    for needle in ("installers/icons.py iconset", "iconutil -c icns", "RELAY_ICON_ICNS",
                   "installers/relay.spec", "hdiutil create", "installers/smoke.py",
                   "Contents/MacOS", "/usr/local/bin/relay-cli", "dev.relay.Relay"):
        assert needle in text, needle


# --- CI ---------------------------------------------------------------------------------

def test_workflow_builds_on_three_systems_with_scripts_that_exist() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    matrix = re.search(r"^\s+os: \[(.*)\]", text, flags=re.M)
    assert matrix is not None
    systems = [s.strip() for s in matrix.group(1).split(",")]
    assert {s.split("-")[0] for s in systems} == {"ubuntu", "macos", "windows"}
    scripts = set(re.findall(r"installers/[\w./-]+\.(?:sh|ps1|py)", text))
    assert {"installers/linux/build.sh", "installers/linux/check-deb.sh", "installers/macos/build.sh",
            "installers/windows/build.ps1", "installers/windows/check-install.ps1"} <= scripts
    missing = [s for s in scripts if not (REPO / s).is_file()]
    assert not missing, missing
    assert 'python-version: "3.11"' in text
    assert "actions/upload-artifact@" in text
    assert '".[installer]"' in text
