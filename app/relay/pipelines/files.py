"""Where pipelines live: ``<repo>/.relay/pipelines.json``, and files to import or export.

The repository's file holds ``{"pipelines": [...]}`` so the designer can keep several
next to the code they work on. Reading also accepts a file holding one pipeline object
(seed 000's example) or a bare list. Writes are atomic and keep the other pipelines.
"""

from __future__ import annotations

import json
from pathlib import Path

from relay.core import jsonvalue
from relay.core.errors import PipelineError, PipelineInvalidError
from relay.core.fsutil import write_atomic
from relay.core.pipeline_model import Pipeline, parse_pipeline

FOLDER = ".relay"
FILE = "pipelines.json"


def pipelines_path(repo: Path) -> Path:
    return repo / FOLDER / FILE


def parse_text(text: str, source: str) -> list[Pipeline]:
    """Every pipeline in a file's text; a clear error naming the line for bad JSON."""
    try:
        raw = jsonvalue.loads(text)
    except json.JSONDecodeError as exc:
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
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PipelineError(f"{path} does not exist.", "Check the path.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PipelineError(f"Cannot read {path}: {exc}.", "Check the file.") from None
    return parse_text(text, str(path))


def list_pipelines(repo: Path) -> list[Pipeline]:
    """The repository's pipelines (none when it has no file yet)."""
    path = pipelines_path(repo)
    return read_file(path) if path.exists() else []


def dump(pipelines: list[Pipeline]) -> str:
    return json.dumps({"pipelines": [p.to_json_obj() for p in pipelines]}, indent=2,
                      ensure_ascii=False) + "\n"


def save(repo: Path, pipeline: Pipeline, replace: str | None = None) -> Path:
    """Store ``pipeline`` in the repository's file (replacing the one named ``replace`` or
    its own name); the others are kept as they were."""
    path = pipelines_path(repo)
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
    write_atomic(pipelines_path(repo), dump(kept).encode("utf-8"), mode=0o644)
    return True


def export(pipeline: Pipeline, path: Path) -> None:
    write_atomic(path, dump([pipeline]).encode("utf-8"), mode=0o644)


def resolve(name_or_file: str, repo: Path) -> Pipeline:
    """A pipeline named in the repository's file, or the one in a file at that path."""
    candidate = Path(name_or_file).expanduser()
    if candidate.suffix == ".json" or candidate.is_file():
        found = read_file(candidate)
        if len(found) != 1:
            raise PipelineError(f"{candidate} holds {len(found)} pipelines.",
                                "Name one of them instead: "
                                + ", ".join(p.name for p in found) if found else "Add one.")
        return found[0]
    for pipeline in list_pipelines(repo):
        if pipeline.name == name_or_file:
            return pipeline
    known = [p.name for p in list_pipelines(repo)]
    raise PipelineError(f"No pipeline named {name_or_file!r} in {pipelines_path(repo)}.",
                        f"Known: {', '.join(known)}." if known else
                        "Create one in the designer, or pass a JSON file.")
