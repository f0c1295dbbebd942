"""Structured answers checked with pydantic, and the one repair request on failure.

A run asks for JSON when ``options["output_model"]`` is a pydantic model class, or when
``options["purpose"] == "plan"`` (the pipeline planner: the answer must be a
:class:`relay.core.pipeline_model.Pipeline`). The final answer's JSON — a fenced ```json block,
else the outermost ``{…}`` — is validated; on failure the loop asks once more with the
problems listed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from pydantic import BaseModel, ValidationError

from relay.core import jsonvalue
from relay.core.pipeline_model import Pipeline


def output_model(options: Mapping[str, object]) -> type[BaseModel] | None:
    wanted = options.get("output_model")
    if isinstance(wanted, type) and issubclass(wanted, BaseModel):
        return wanted
    if options.get("purpose") == "plan":
        return Pipeline
    return None


def problems(answer: str, model: type[BaseModel]) -> list[str]:
    """What is wrong with ``answer`` as a ``model`` (empty: it is valid)."""
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", answer, re.DOTALL)
    text = fenced.group(1) if fenced else answer[answer.find("{"): answer.rfind("}") + 1]
    if not text:
        return ["the answer holds no JSON object"]
    try:
        raw = jsonvalue.loads(text)
    except json.JSONDecodeError as exc:
        return [f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"]
    try:
        model.model_validate(raw)
    except ValidationError as exc:
        return [f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
                for err in exc.errors()[:20]]
    return []


def repair_prompt(found: list[str]) -> str:
    return ("Your answer is not valid JSON in the required format:\n"
            + "\n".join(f"- {p}" for p in found)
            + "\nAnswer again with the corrected JSON object only.")
