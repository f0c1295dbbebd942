"""PyInstaller run-time hook: let pygit2 import where OpenSSL's built-in paths do not exist.

pygit2 hands ``ssl.get_default_verify_paths()`` to libgit2 when it is imported, and the
import fails ("OpenSSL error: failed to load certificates") when neither path exists. In a
frozen build those paths are the *build* machine's OpenSSL directory (/usr/lib/ssl from
Debian/Ubuntu, a Python.framework folder on macOS), which another distribution (Fedora:
/etc/pki/tls, Arch: /etc/ssl) or a system without ca-certificates does not have. So:

* when the defaults (or SSL_CERT_FILE / SSL_CERT_DIR) name something that exists, nothing
  changes;
* else the first CA bundle found in the usual places becomes SSL_CERT_FILE (or a
  certificate folder SSL_CERT_DIR), which libgit2 and Python's ssl both honour;
* with no CA certificates at all, pygit2 is imported once with SSL_CERT_DIR pointing at an
  empty folder and the environment is restored: Relay's git work is local, and an https
  remote would then fail verification, as it should without certificates.

Windows is left alone (libgit2 uses the system's WinHTTP/Schannel store there).
"""


def _pyi_rthook() -> None:
    import os
    import sys

    if sys.platform == "win32":
        return
    import ssl

    defaults = ssl.get_default_verify_paths()  # SSL_CERT_FILE/DIR first, only paths that exist
    if defaults.cafile or defaults.capath:
        return
    bundles = (
        "/etc/ssl/certs/ca-certificates.crt",  # Debian, Ubuntu, Gentoo, Arch (p11-kit)
        "/etc/pki/tls/certs/ca-bundle.crt",  # Fedora, RHEL
        "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  # Fedora, RHEL
        "/etc/ssl/ca-bundle.pem",  # openSUSE
        "/etc/ssl/cert.pem",  # macOS, Alpine, Arch
        "/usr/local/etc/openssl/cert.pem",  # Homebrew
    )
    for path in bundles:
        if os.path.isfile(path):
            os.environ["SSL_CERT_FILE"] = path
            return
    for folder in ("/etc/ssl/certs", "/etc/pki/tls/certs"):
        if os.path.isdir(folder):
            os.environ["SSL_CERT_DIR"] = folder
            return
    saved = {name: os.environ.pop(name, None) for name in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
    os.environ["SSL_CERT_DIR"] = getattr(sys, "_MEIPASS", os.path.dirname(sys.executable))
    try:
        import pygit2  # noqa: F401  (its settings read the locations once, at import)
    except ImportError:
        pass
    finally:
        del os.environ["SSL_CERT_DIR"]
        os.environ.update({name: value for name, value in saved.items() if value is not None})


_pyi_rthook()
del _pyi_rthook
