"""installers/rthooks/pyi_rth_relay_certs.py: pygit2 imports frozen on any distribution.

Seen on a fresh Debian 12 (debootstrap, no ca-certificates): the frozen relay-cli died on
``import pygit2`` ("OpenSSL error: failed to load certificates") because the OpenSSL folder
baked in at build time did not exist. The hook runs here in a subprocess, as PyInstaller
runs it: first thing, before the app's imports.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.installers.helpers import INSTALLERS

HOOK = INSTALLERS / "rthooks" / "pyi_rth_relay_certs.py"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the hook does nothing on Windows")


def run_hook(tmp_path: Path, env: dict[str, str], hide: tuple[str, ...] = ()) -> dict[str, str]:
    """Run the hook with the paths starting with ``hide`` made invisible; report what it left."""
    probe = textwrap.dedent(f"""
        import json, os, os.path, sys
        hide = {hide!r}
        real_isfile, real_isdir = os.path.isfile, os.path.isdir
        os.path.isfile = lambda p: not str(p).startswith(hide) and real_isfile(p)
        os.path.isdir = lambda p: not str(p).startswith(hide) and real_isdir(p)
        sys._MEIPASS = {str(tmp_path)!r}
        exec(compile(open({str(HOOK)!r}).read(), "hook", "exec"))
        import pygit2
        print(json.dumps({{"file": os.environ.get("SSL_CERT_FILE"), "dir": os.environ.get("SSL_CERT_DIR"),
                          "pygit2_dir": pygit2.settings.ssl_cert_dir}}))
    """)
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env}, check=False)
    assert proc.returncode == 0, proc.stderr
    import json

    result: dict[str, str] = json.loads(proc.stdout.splitlines()[-1])
    return result


def system_bundle() -> str:
    for path in ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
                 "/etc/ssl/cert.pem"):
        if os.path.isfile(path):
            return path
    pytest.skip("no system CA bundle on this machine")


def test_usable_defaults_are_left_alone(tmp_path: Path) -> None:
    bundle = system_bundle()
    result = run_hook(tmp_path, {"SSL_CERT_FILE": bundle, "SSL_CERT_DIR": "/nonexistent"})
    assert result["file"] == bundle
    assert result["dir"] == "/nonexistent"


def test_a_system_bundle_replaces_paths_that_do_not_exist(tmp_path: Path) -> None:
    bundle = system_bundle()
    result = run_hook(tmp_path, {"SSL_CERT_FILE": "/nonexistent/cert.pem",
                                 "SSL_CERT_DIR": "/nonexistent/certs"})
    assert result["file"] == bundle  # the build machine's OpenSSL folder is not here


def test_without_any_certificate_pygit2_still_imports_and_the_env_is_restored(tmp_path: Path) -> None:
    result = run_hook(tmp_path, {"SSL_CERT_FILE": "/nonexistent/cert.pem",
                                 "SSL_CERT_DIR": "/nonexistent/certs"},
                      hide=("/etc", "/usr/local", "/usr/lib/ssl"))
    assert result["pygit2_dir"] == str(tmp_path)  # an empty folder: local git works
    assert result["file"] == "/nonexistent/cert.pem"  # what agents inherit is untouched
    assert result["dir"] == "/nonexistent/certs"
