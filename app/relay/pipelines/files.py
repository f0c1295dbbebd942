"""Where pipelines live: ``<repo>/.relay/pipelines.json``, and files to import or export.

The repository's file holds ``{"pipelines": [...]}`` so the designer can keep several
next to the code they work on. Reading also accepts a file holding one pipeline object
(seed 000's example) or a bare list. Writes are atomic and keep the other pipelines.
The repository's file — and, with ``confine``, a file named to :func:`resolve` — is
read and written only inside the repository, with symlinks and ``..`` resolved first.
A file is read only up to ``MAX_FILE_BYTES`` and ``MAX_NESTING`` deep (the format's
limits, :mod:`relay.core.pipeline_model`): a repository's file never costs more.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from relay.core import jsonvalue
from relay.core.errors import PipelineError, PipelineInvalidError
from relay.core.fsutil import open_regular, write_atomic
from relay.core.pipeline_model import MAX_FILE_BYTES, MAX_NESTING, Pipeline, parse_pipeline
from relay.core.redact import scrub_obj

FOLDER = ".relay"
FILE = "pipelines.json"


def pipelines_path(repo: Path) -> Path:
    return repo / FOLDER / FILE


def inside(path: Path, repo: Path) -> Path:
    """``path`` with symlinks and ``..`` resolved, when that is inside ``repo``; else a
    :class:`PipelineError` (a repository or a client never makes Relay read elsewhere)."""
    root = repo.expanduser().resolve()
    real = path.expanduser().resolve()
    if not real.is_relative_to(root):
        shown = f"{path} (→ {real})" if real != path else str(path)
        raise PipelineError(f"{shown} is outside the repository {root}: Relay reads pipeline "
                            "files only inside it.",
                            "Use a file inside the repository, or import it there first "
                            "(`relay-cli pipeline import FILE --repo REPO`).")
    return real


def repo_file(repo: Path) -> Path:
    """The repository's ``.relay/pipelines.json``, checked to stay inside the repository."""
    path = pipelines_path(repo)
    inside(path, repo)
    return path


def _too_big(source: str) -> PipelineError:
    return PipelineError(f"{source} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB, the "
                         "most a pipeline file may hold.", "Split it into smaller files.")


def _too_deep(source: str) -> PipelineError:
    return PipelineError(f"{source} is nested deeper than {MAX_NESTING} levels, the most a "
                         "pipeline file may be.", "Fix the file (or export it again from the "
                                                  "designer).")


def parse_text(text: str, source: str) -> list[Pipeline]:
    """Every pipeline in a file's text; a clear error naming the line for bad JSON."""
    if len(text) > MAX_FILE_BYTES:
        raise _too_big(source)
    try:
        raw = jsonvalue.loads(text, max_depth=MAX_NESTING)
    except json.JSONDecodeError as exc:
        if exc.msg.startswith("nested deeper than"):
            raise _too_deep(source) from None
        raise PipelineError(f"{source} is not valid JSON: {exc.msg} at line {exc.lineno}, "
                            f"column {exc.colno}.", "Fix the file (or export it again from "
                                                    "the designer).") from None
    items = raw.get("pipelines") if isinstance(raw, dict) and "pipelines" in raw else raw
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list):
        raise PipelineError(f"{source} holds no pipelines.",
                            'Expected {"pipelines": [...]} or one pipeline object.')
    out = [parse_pipeline(item, f"{source} pipelines[{i}]") for i, item in enumerate(items)]
    names = [p.name for p in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise PipelineInvalidError(f"{source} names a pipeline more than once.",
                                   [f"pipeline name {n!r} is used twice" for n in twice])
    return out


def read_file(path: Path) -> list[Pipeline]:
    """Every pipeline in the file at ``path`` (read only up to ``MAX_FILE_BYTES``)."""
    try:
        with open_regular(path) as stream:  # a FIFO in a repository must not hang Relay
            data = stream.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise _too_big(str(path))
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise PipelineError(f"{path} does not exist.", "Check the path.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PipelineError(f"Cannot read {path}: {exc}.", "Check the file.") from None
    return parse_text(text, str(path))


def list_pipelines(repo: Path) -> list[Pipeline]:
    """The repository's pipelines (none when it has no file yet)."""
    path = repo_file(repo)
    return read_file(path) if path.exists() else []


def dump(pipelines: list[Pipeline]) -> str:
    return json.dumps({"pipelines": [p.to_json_obj() for p in pipelines]}, indent=2,
                      ensure_ascii=False) + "\n"


def save(repo: Path, pipeline: Pipeline, replace: str | None = None) -> Path:
    """Store ``pipeline`` in the repository's file (replacing the one named ``replace`` or
    its own name); the others are kept as they were."""
    path = repo_file(repo)
    current = list_pipelines(repo)
    old = replace or pipeline.name
    kept = [p for p in current if p.name not in (old, pipeline.name)]
    position = next((i for i, p in enumerate(current) if p.name == old), len(kept))
    kept.insert(min(position, len(kept)), pipeline)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, dump(kept).encode("utf-8"), mode=0o644)
    return path


def delete(repo: Path, name: str) -> bool:
    current = list_pipelines(repo)
    kept = [p for p in current if p.name != name]
    if len(kept) == len(current):
        return False
    write_atomic(repo_file(repo), dump(kept).encode("utf-8"), mode=0o644)
    return True


def export(pipeline: Pipeline, path: Path) -> None:
    """Write ``pipeline`` to a file of its own (``pipeline export``, ``plan --out``): a copy
    that leaves Relay, so its prompts and commands are scrubbed of secrets first."""
    clean = Pipeline.model_validate(scrub_obj(pipeline.model_dump(mode="json")))
    write_atomic(path, dump([clean]).encode("utf-8"), mode=0o644)


def locate(name_or_file: str, repo: Path, *, confine: bool = False) -> Path | None:
    """The file ``name_or_file`` names, or None when it is a pipeline's name (then it is
    in the repository's file).

    ``confine`` (a client's request, not the user's own command line): a relative path is
    the repository's, and a file outside the repository is refused.
    """
    candidate = Path(name_or_file).expanduser()
    if confine:
        path = candidate if candidate.is_absolute() else repo / candidate
        if candidate.suffix == ".json" or os.sep in name_or_file or path.is_file():
            return inside(path, repo)
        return None
    return candidate if candidate.suffix == ".json" or candidate.is_file() else None


def pick(found: list[Pipeline], name: str | None, path: Path, repo: Path) -> Pipeline:
    """The pipeline ``name`` of a file's (``None``: the file's only pipeline)."""
    if name is None:
        if len(found) != 1:
            raise PipelineError(f"{path} holds {len(found)} pipelines.",
                                "Name one of them instead: "
                                + ", ".join(p.name for p in found) if found else "Add one.")
        return found[0]
    for pipeline in found:
        if pipeline.name == name:
            return pipeline
    known = [p.name for p in found]
    raise PipelineError(f"No pipeline named {name!r} in {pipelines_path(repo)}.",
                        f"Known: {', '.join(known)}." if known else
                        "Create one in the designer, or pass a JSON file.")


def resolve(name_or_file: str, repo: Path, *, confine: bool = False) -> Pipeline:
    """A pipeline named in the repository's file, or the one in a file at that path
    (``confine``: see :func:`locate`)."""
    path = locate(name_or_file, repo, confine=confine)
    if path is not None:
        return pick(read_file(path), None, path, repo)
    return pick(list_pipelines(repo), name_or_file, pipelines_path(repo), repo)
