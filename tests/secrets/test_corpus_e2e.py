"""The secrets corpus, end to end: every record through a real ``relay-cli run … --provider
claude --json`` (the fake Claude Code prints it as assistant text, a tool call and the
tool's output), then every byte of the data folder and of relay-cli's output is read
(tests/secrets/measure.py). The thresholds are issue 20's: recall ≥ 99.5 % and false
positives ≤ 0.5 % at every boundary, and no secret at all on relay-cli's stdout/stderr."""

from __future__ import annotations

import random
from pathlib import Path

from tests.secrets import make_corpus, measure
from tests.secrets.measure import FP_MAX, FP_PLACES, PLACES, RECALL_MIN, markdown, needles


def test_the_checked_in_corpus_is_what_the_generator_makes() -> None:
    records = make_corpus.build()
    assert make_corpus.CORPUS.read_text(encoding="utf-8") == make_corpus.dump(records), \
        "run: python -m tests.secrets.make_corpus"
    positives = [r for r in records if r["kind"] == "positive"]
    lookalikes = [r for r in records if r["kind"] == "lookalike"]
    assert len(positives) >= 600
    assert len({r["format"] for r in positives}) >= 40
    assert len(lookalikes) >= 600
    assert all(r["secret"] in r["text"] or all(line in r["text"] for line in
                                              r["secret"].splitlines()) or
               "\\n" in r["text"] for r in positives)
    assert len({r["id"] for r in records}) == len(records)
    assert len({r["text"] for r in lookalikes}) == len(lookalikes)


def test_the_measurement_can_fail(tmp_path: Path) -> None:
    """The search finds what is there: a "secret" no scrubber may touch (a commit sha, which
    must survive as a look-alike) is reported at the store and on stdout, and ordinary
    look-alikes are seen in every channel."""
    rng = random.Random(7)
    sample = rng.sample([r for r in make_corpus.load() if r["kind"] == "lookalike"], 6)
    sha = "0f5c3b1e9d7a2c4b6e8f0a1c3e5b7d9f1a3c5e7b"
    probe = {"id": "P9999", "kind": "positive", "format": "probe", "context": "prose",
             "secret": sha, "text": f"The fix landed in commit {sha}."}
    result = measure.measure(tmp_path, [probe, *sample], n_batches=1)
    assert result.failures == []
    assert {"db", "stdout", "cli_show"} <= result.leaks["P9999"]
    assert result.fp() == 0.0, {r["text"]: result.eaten[r["id"]] for r in sample}
    assert needles("a\nbbbbbbbbbbbbbbbbbbbb")[-1] == b"bbbbbbbbbbbbbbbbbbbb"


def test_the_corpus_end_to_end(tmp_path: Path) -> None:
    """Recall and false positives at every boundary, and nothing on relay-cli's output
    (one test, so that the measurement runs once under xdist)."""
    result = measure.measure(tmp_path)
    problems = list(result.failures)
    on_output = sorted({r["format"] for r in result.positives
                        if result.leaks[r["id"]] & {"stdout", "stderr"}})
    if on_output:
        problems.append(f"secrets on relay-cli's stdout/stderr: {on_output}")
    for place in PLACES:
        if result.recall(place) < RECALL_MIN:
            leaked = sorted({r["format"] for r in result.positives
                             if place in result.leaks[r["id"]]})
            problems.append(f"{place}: recall {result.recall(place):.3f} < {RECALL_MIN}, "
                            f"leaking {leaked}")
    for place in FP_PLACES:
        if result.fp(place) > FP_MAX:
            eaten = sorted({r["category"] for r in result.lookalikes
                            if place in result.eaten[r["id"]]})
            problems.append(f"{place}: false positives {result.fp(place):.3f} > {FP_MAX}, "
                            f"eaten {eaten}")
    assert not problems, "\n".join(problems) + "\n\n" + markdown(result)
