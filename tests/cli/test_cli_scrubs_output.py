"""relay-cli's stdout and stderr carry no secret, whatever writes them.

The one point is the process's streams (``core/termsafe.py``: ``scrubbed_output``), so a
``print``, a ``sys.stdout.write``, argparse's own error line and a rich table all pass it;
the consoles also scrub before rich wraps a long token across lines.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import subprocess
import sys

from rich.table import Table

from relay.cli.terminal import console
from relay.core.termsafe import ScrubbingStream, json_text

SECRET = "sk-ant-api03-" + secrets.token_urlsafe(60)
GITHUB = "ghp_" + "".join(secrets.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkm23456789")
                          for _ in range(36))


def test_a_stream_scrubs_lines_partial_ones_on_flush() -> None:
    inner = io.StringIO()
    stream = ScrubbingStream(inner)
    stream.write(f"one {SECRET[:20]}")
    stream.write(f"{SECRET[20:]} two\nthree {GITHUB}")
    assert SECRET not in inner.getvalue()
    assert inner.getvalue()[4:] == "[REDACTED:anthropic_key] two\n"
    stream.flush()
    assert inner.getvalue().endswith("three [REDACTED:github_token]")


def test_json_text_scrubs_the_value() -> None:
    text = json_text({"task": f"use {SECRET}", "db_password": "hunter2-Horse-Battery-9"})
    assert SECRET not in text
    assert "hunter2" not in text
    assert json.loads(text)["task"] == "use [REDACTED:anthropic_key]"


def test_a_token_wrapped_in_a_narrow_table_cell_is_scrubbed() -> None:
    out = io.StringIO()
    table = Table()
    table.add_column("task")
    table.add_row(f"deploy {SECRET} now")
    console(file=out, width=30).print(table)
    compact = "".join(out.getvalue().split())
    assert "[REDACTED:anthropic_key]" in out.getvalue()
    assert SECRET[13:40] not in compact  # not even as pieces of a wrapped cell


def test_argparse_and_error_lines_on_stderr_are_scrubbed() -> None:
    env = {**os.environ, "COLUMNS": "60"}
    proc = subprocess.run([sys.executable, "-m", "relay.cli.main", "sessions", SECRET, GITHUB],
                          capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL,
                          timeout=60, check=False)
    assert proc.returncode == 2
    assert "unrecognized arguments" in proc.stderr  # argparse's own line, written directly
    assert SECRET not in proc.stderr + proc.stdout
    assert GITHUB not in proc.stderr
    assert "[REDACTED:anthropic_key]" in proc.stderr
