"""What a pipeline file will run, and whether its user has accepted that.

A pipeline comes with a repository anyone may have written, and some of its fields
become programs Relay starts: each node's ``verify`` lines, split into argument arrays
and run in the step's worktree (:meth:`~relay.core.pipeline_model.Node.verify_argv`; a
node has no other command field, and the agent CLIs themselves are Relay's adapters).
:func:`commands` lists them; the CLI's ``validate`` and ``list``, the designer and the MCP
tools show them.

Before the first run of a file whose commands its user has not accepted, Relay asks (the
CLI on a terminal, the window in a dialog); the answer is remembered per SHA-256 of the
file's bytes in the data folder's database (``pipeline_trust``), never in the repository.
Changing the file asks again; a file without commands needs no answer. Where nobody can
answer (no terminal, an MCP client), an unaccepted file is refused: like approvals, the
default is no.
"""

from __future__ import annotations

import hashlib
import shlex
from dataclasses import dataclass
from pathlib import Path

from relay.core.errors import PipelineError
from relay.core.fsutil import open_regular
from relay.core.pipeline_model import MAX_FILE_BYTES, Pipeline
from relay.pipelines import files


@dataclass(frozen=True)
class Command:
    """One program a pipeline runs: where it is written and the line as written."""

    pipeline: str
    node: str
    field: str
    line: str

    @property
    def argv(self) -> list[str] | None:
        """The argument array it runs as (None: it cannot be split; validation says so)."""
        try:
            return shlex.split(self.line)
        except ValueError:
            return None

    def __str__(self) -> str:
        return f"{self.pipeline} · {self.node} · {self.field}: {self.line}"


def commands(pipelines: list[Pipeline]) -> list[Command]:
    """Every command the pipelines run, in file order."""
    return [Command(p.name, n.id, f"verify[{i}]", line)
            for p in pipelines for n in p.nodes for i, line in enumerate(n.verify)]


@dataclass(frozen=True)
class Source:
    """A pipeline file as read once: its path, the SHA-256 of its bytes, its pipelines."""

    path: Path
    digest: str
    pipelines: list[Pipeline]

    @property
    def commands(self) -> list[Command]:
        return commands(self.pipelines)


def read_source(path: Path) -> Source:
    """``path`` read once: what is hashed is what is parsed."""
    try:
        with open_regular(path) as stream:  # a FIFO in a repository must not hang Relay
            data = stream.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise PipelineError(f"{path} does not exist.", "Check the path.") from None
    except OSError as exc:
        raise PipelineError(f"Cannot read {path}: {exc}.", "Check the file.") from None
    if len(data) > MAX_FILE_BYTES:
        return Source(path, "", files.read_file(path))  # read_file names the limit
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PipelineError(f"Cannot read {path}: {exc}.", "Check the file.") from None
    return Source(path, hashlib.sha256(data).hexdigest(), files.parse_text(text, str(path)))


def load(name_or_file: str, repo: Path, *, confine: bool = False) -> tuple[Pipeline, Source]:
    """The pipeline ``name_or_file`` names (as :func:`files.resolve`) and the file it is in."""
    path = files.locate(name_or_file, repo, confine=confine)
    if path is not None:
        source = read_source(path)
        return files.pick(source.pipelines, None, path, repo), source
    path = files.repo_file(repo)
    if not path.exists():
        raise PipelineError(f"No pipeline named {name_or_file!r} in {path}.",
                            "Create one in the designer, or pass a JSON file.")
    source = read_source(path)
    return files.pick(source.pipelines, name_or_file, path, repo), source


def repo_source(repo: Path) -> Source | None:
    """The repository's ``.relay/pipelines.json`` as read now (None: it has none)."""
    path = files.repo_file(repo)
    return read_source(path) if path.exists() else None
