"""Decisions and constraints, lifted from what the agent wrote and what the user asked.

Simple heuristics on sentences, by design: they are cheap, predictable and easy to read
back in a contract; they miss what is phrased otherwise.

The text is cut into sentences: fenced code blocks are dropped, each line is one unit
(list markers ``-``/``*``/``1.``, ``>`` quotes, ``#`` headings and ``**`` emphasis
stripped; a leading ``(simulated)``-style parenthesis too), split after ``.``, ``!`` or
``?`` before a capital letter. Sentences shorter than 12 or longer than 400 characters are
left out. Case does not matter.

A sentence is a **decision** when it

- is labelled: starts with ``Decision:``, ``Decided:``, ``Design decision:`` or ``Choice:``;
- says what the agent settles on: ``I'll`` / ``I will`` / ``We'll`` / ``We will`` /
  ``I'm going to`` / ``Let's`` + ``use``, ``go with``, ``keep``, ``stick with``,
  ``switch to``, ``adopt``, ``rely on`` or ``prefer``;
- reports a choice: ``I chose`` / ``I decided`` / ``I picked`` / ``I opted`` / ``I went
  with`` / ``I settled on`` (``We`` too).

A sentence is a **constraint** when it

- is labelled: starts with ``Constraint:``, ``Requirement:``, ``Rule:`` or ``Important:``;
- is a prohibition: starts with ``Never``, ``Do not``, ``Don't``, ``Must not`` or ``Avoid``;
- states an obligation: contains ``must not``, ``must never``, ``must always``,
  ``should never``, ``is not allowed``, ``are not allowed``, ``may not``, or ``must`` +
  ``be``/``stay``/``remain``/``keep``/``use``/``pass``/``work``/``run``/``support``/``match``.

A decision is not also a constraint. The agent's reasoning (thinking) text is not read;
constraints are also read from the session's task (what the user asked).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

MIN_CHARS = 12
MAX_CHARS = 400

_FENCE = re.compile(r"^\s*(```|~~~)")
_MARKER = re.compile(r"^\s*(?:[-*+•]\s+|\d+[.)]\s+|>\s*|#{1,6}\s+)+")
_LEADING_PAREN = re.compile(r"^\((?:simulated|note|demo)\)\s*", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'`(]?[A-Z])")

_DECISION = re.compile(
    r"^(?:(?:design\s+)?decision|decided|choice)\s*[:—–-]\s*\S"
    r"|^(?:i|we)(?:'ll|\s+will|'m\s+going\s+to|\s+am\s+going\s+to|\s+are\s+going\s+to)\s+"
    r"(?:use|go\s+with|keep|stick\s+with|switch\s+to|adopt|rely\s+on|prefer)\b"
    r"|^let(?:'s|\s+us)\s+(?:use|go\s+with|keep|stick\s+with|switch\s+to|adopt)\b"
    r"|^(?:i|we)\s+(?:chose|decided|picked|opted|went\s+with|settled\s+on)\b",
    re.IGNORECASE)
_CONSTRAINT = re.compile(
    r"^(?:constraint|requirement|rule|important)\s*[:—–-]\s*\S"
    r"|^(?:never|do\s+not|don't|must\s+not|avoid)\b"
    r"|\b(?:must\s+not|must\s+never|must\s+always|should\s+never|(?:is|are)\s+not\s+allowed"
    r"|may\s+not|must\s+(?:be|stay|remain|keep|use|pass|work|run|support|match))\b",
    re.IGNORECASE)


def sentences(text: str) -> Iterator[str]:
    """The sentences of ``text`` (see the module docstring), whitespace collapsed."""
    fenced = False
    for raw in text.splitlines():
        if _FENCE.match(raw):
            fenced = not fenced
            continue
        if fenced:
            continue
        line = _MARKER.sub("", raw).replace("**", "").replace("__", "").strip()
        line = _LEADING_PAREN.sub("", line)
        for part in _SENTENCE_END.split(line):
            sentence = " ".join(part.split())
            if MIN_CHARS <= len(sentence) <= MAX_CHARS:
                yield sentence


def classify(sentence: str) -> str | None:
    """``"decision"``, ``"constraint"`` or None for one sentence."""
    if _DECISION.search(sentence):
        return "decision"
    if _CONSTRAINT.search(sentence):
        return "constraint"
    return None


def extract(text: str, *, decisions: bool = True) -> list[tuple[str, str]]:
    """``(kind, sentence)`` for each decision and constraint in ``text``, in order.

    ``decisions=False`` keeps constraints only (for the user's task).
    """
    out = []
    for sentence in sentences(text):
        kind = classify(sentence)
        if kind == "constraint" or (kind == "decision" and decisions):
            out.append((kind, sentence))
    return out


def normalised(text: str) -> str:
    """The form two facts are compared in (case and punctuation at the ends ignored)."""
    return " ".join(text.lower().split()).strip(" .!;:")
