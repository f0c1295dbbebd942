"""A JSON settings file Relay edits for the user: read, written back in its own style, backed up.

Claude Code's ``settings.json`` and ``.claude.json`` are the user's files. Relay changes only
its own entries in them (:mod:`relay.board.claude_setup`) and keeps the rest as it found it:
key order (Python's dicts keep it), the indentation (two spaces, four, a tab, or none), the
line endings, a byte-order mark and the final newline. What JSON cannot carry
(``{ "a" : 1 }``-style spacing, ``1.0`` vs ``1``) comes back normalised — except when Relay
takes its entries out again and the rest is what a backup holds: then the backup's own bytes
are written (:meth:`SettingsFile.restorable`), so apply + remove leaves the file as it was.

Every write is preceded by a timestamped backup beside the file
(``settings.json.relay-backup-20261207-164500``; the newest :data:`KEEP_BACKUPS` are kept) and
is atomic (a temporary file renamed over it, the file's mode kept). Standard library and
:mod:`relay.core` only; no Qt.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relay.core.errors import SetupError
from relay.core.fsutil import write_atomic

BACKUP_INFIX = ".relay-backup-"
#: backups of one file Relay keeps (older ones of Relay's own are deleted)
KEEP_BACKUPS = 5
_BOM = b"\xef\xbb\xbf"
_INDENT = re.compile(rb"\n([ \t]+)\S")


@dataclass(frozen=True)
class Style:
    """How a JSON file is laid out, as far as :func:`json.dumps` can repeat it."""

    indent: str | None = "  "
    newline: str = "\n"
    final_newline: bool = True
    bom: bool = False
    compact: bool = False

    @classmethod
    def of(cls, data: bytes) -> Style:
        bom = data.startswith(_BOM)
        body = data[len(_BOM):] if bom else data
        stripped = body.rstrip()
        if b"\n" not in stripped:  # one line
            return cls(indent=None, final_newline=body.endswith(b"\n"), bom=bom,
                       compact=b'":' in stripped and b'": ' not in stripped)
        found = _INDENT.search(body)
        return cls(indent=found.group(1).decode("ascii") if found else "  ",
                   newline="\r\n" if b"\r\n" in body else "\n",
                   final_newline=body.endswith(b"\n"), bom=bom)

    def dump(self, value: Any) -> bytes:
        if self.indent is None:
            text = json.dumps(value, ensure_ascii=False,
                              separators=(",", ":") if self.compact else None)
        else:
            text = json.dumps(value, ensure_ascii=False, indent=self.indent)
        if self.newline != "\n":
            text = text.replace("\n", self.newline)
        if self.final_newline:
            text += self.newline
        return (_BOM if self.bom else b"") + text.encode("utf-8")


def same(a: Any, b: Any) -> bool:
    """Equal values with their keys in the same order (``==`` ignores the order)."""
    return json.dumps(a, sort_keys=False) == json.dumps(b, sort_keys=False)


@dataclass
class SettingsFile:
    """One JSON object file: what it held when read (``original``; None: no file) and the
    value to write."""

    path: Path
    original: bytes | None
    value: dict[str, Any]

    @classmethod
    def read(cls, path: Path) -> SettingsFile:
        """Raises :class:`SetupError` when the file cannot be read or is not a JSON object."""
        try:
            data: bytes | None = path.read_bytes()
        except FileNotFoundError:
            data = None
        except OSError as exc:
            raise SetupError(f"Could not read {path}: {exc.strerror or exc}.",
                             "Check the file's permissions; nothing was changed.") from exc
        if data is None or not data.strip(_BOM + b" \t\r\n"):
            return cls(path, data, {})
        try:
            value = json.loads(data.decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise SetupError(f"{path} is not valid JSON ({exc}).",
                             "Fix or move the file (Claude Code would not read it either), "
                             "then run the setup again; nothing was changed.") from exc
        if not isinstance(value, dict):
            raise SetupError(f"{path} holds JSON that is not an object.",
                             "Fix or move the file, then run the setup again; nothing was "
                             "changed.")
        return cls(path, data, value)

    @property
    def style(self) -> Style:
        return Style.of(self.original) if self.original else Style()

    def changed(self) -> bool:
        """Whether the value differs from what was read."""
        if self.original is None:
            return bool(self.value)
        return self.encoded() != self.original

    def encoded(self) -> bytes:
        if self.original is not None:
            try:
                if same(json.loads(self.original.decode("utf-8-sig")), self.value):
                    return self.original  # nothing changed: the bytes as they are
            except (UnicodeDecodeError, ValueError):
                pass
        return self.style.dump(self.value)

    def backups(self) -> list[Path]:
        """Relay's backups of this file, newest first."""
        try:
            found = [p for p in self.path.parent.iterdir()
                     if p.name.startswith(self.path.name + BACKUP_INFIX)]
        except OSError:
            return []
        return sorted(found, key=lambda p: p.name, reverse=True)

    def restorable(self) -> bytes | None:
        """The bytes of the newest backup whose JSON is exactly the value to write (a file
        Relay's entries were added to and are now taken out of): written instead of a
        re-encoding, so the file is byte for byte what it was."""
        for backup in self.backups():
            try:
                data = backup.read_bytes()
                if same(json.loads(data.decode("utf-8-sig")), self.value):
                    return data
            except (OSError, UnicodeDecodeError, ValueError):
                continue
        return None

    def backup(self) -> Path | None:
        """Copy the file as it is to a new timestamped backup; None when there is no file.
        Raises :class:`SetupError` (nothing changed) when it cannot be written."""
        if self.original is None:
            return None
        stamp = time.strftime("%Y%m%d-%H%M%S")
        target = self.path.with_name(f"{self.path.name}{BACKUP_INFIX}{stamp}")
        n = 1
        while target.exists():
            n += 1
            target = self.path.with_name(f"{self.path.name}{BACKUP_INFIX}{stamp}-{n}")
        try:
            write_atomic(target, self.original, self._mode())
        except OSError as exc:
            raise SetupError(f"Could not back up {self.path} to {target}: "
                             f"{exc.strerror or exc}.",
                             "Check the folder's permissions; nothing was changed.") from exc
        for old in self.backups()[KEEP_BACKUPS:]:
            with contextlib.suppress(OSError):
                old.unlink()
        return target

    def write(self, data: bytes | None = None) -> None:
        """Write ``data`` (default: the value, encoded in the file's style) atomically."""
        data = self.encoded() if data is None else data
        try:
            write_atomic(self.path, data, self._mode())
        except OSError as exc:
            raise SetupError(f"Could not write {self.path}: {exc.strerror or exc}.",
                             "Check that the file and its folder are yours and writable; "
                             "the file is as it was (a backup is beside it).") from exc

    def delete(self) -> None:
        try:
            self.path.unlink(missing_ok=True)
        except OSError as exc:
            raise SetupError(f"Could not remove {self.path}: {exc.strerror or exc}.",
                             "Check the folder's permissions (a backup is beside it).") from exc

    def _mode(self) -> int:
        try:
            return os.stat(self.path).st_mode & 0o777
        except OSError:
            return 0o600
