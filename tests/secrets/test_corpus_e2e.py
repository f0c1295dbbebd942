"""The secrets corpus, end to end: every record through a real ``relay-cli run … --provider
claude --json`` (the fake Claude Code prints it as assistant text, a tool call and the
tool's output), then every byte of the data folder and of relay-cli's output is read
(tests/secrets/measure.py). The thresholds are issue 20's: recall ≥ 99.5 % and false
positives ≤ 0.5 % at every boundary, and no secret at all on relay-cli's stdout/stderr."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.secrets import make_corpus, measure
from tests.secrets.measure import FP_PLACES, PLACES, markdown, needles

RECALL_MIN = 0.995
FP_MAX = 0.005


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
    """Without a scrubber in the way the scan finds what it must: one batch of a few records
    run through relay-cli, then its data folder searched for a secret it was never given
    (none), and the channel map says which look-alike is where."""
    rng = random.Random(7)
    records = make_corpus.load()
    sample = rng.sample([r for r in records if r["kind"] == "lookalike"], 6)
    result = measure.measure(tmp_path, sample, n_batches=1)
    assert result.failures == []
    assert result.fp() == 0.0  # ordinary ids and paths survive today, all channels
    assert needles("a\nbbbbbbbbbbbbbbbbbbbb")[-1] == b"bbbbbbbbbbbbbbbbbbbb"
    assert b"sk-ant" in needles("sk-ant-api03-" + "A" * 40)[0]


@pytest.fixture(scope="module")
def corpus_result(tmp_path_factory: pytest.TempPathFactory) -> measure.Result:
    return measure.measure(tmp_path_factory.mktemp("corpus"))


def test_every_corpus_run_completed(corpus_result: measure.Result) -> None:
    assert corpus_result.failures == []


def test_no_secret_reaches_relay_cli_output(corpus_result: measure.Result) -> None:
    leaked = sorted({r["format"] for r in corpus_result.positives
                     if corpus_result.leaks[r["id"]] & {"stdout", "stderr"}})
    assert leaked == [], markdown(corpus_result)


@pytest.mark.parametrize("place", PLACES)
def test_recall_per_boundary(corpus_result: measure.Result, place: str) -> None:
    leaked = sorted({r["format"] for r in corpus_result.positives
                     if place in corpus_result.leaks[r["id"]]})
    assert corpus_result.recall(place) >= RECALL_MIN, \
        f"{place}: recall {corpus_result.recall(place):.3f}, leaking formats {leaked}"


@pytest.mark.parametrize("place", FP_PLACES)
def test_false_positives_per_boundary(corpus_result: measure.Result, place: str) -> None:
    eaten = sorted({r["category"] for r in corpus_result.lookalikes
                    if place in corpus_result.eaten[r["id"]]})
    assert corpus_result.fp(place) <= FP_MAX, \
        f"{place}: false positives {corpus_result.fp(place):.3f}, eaten categories {eaten}"
