"""Retrieval: bm25 ranking, snippets, and user text that can never break the FTS5 query."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.core.errors import RelayError
from relay.knowledge.retrieve import match_expression
from relay.knowledge.service import Knowledge
from tests.conftest import make_repo

BILLING = '''\
"""Invoices."""


def invoice_total(invoice):
    """The total of an invoice: its lines, then the invoice discount."""
    total = sum(line.amount for line in invoice.lines)
    return total - invoice.discount


def send_reminder(customer):
    """Mail a customer about an unpaid invoice."""
    mail(customer.email, "reminder")


def parse_config(path):
    return open(path).read()


def unrelated():
    return 42
'''


@pytest.fixture
async def knowledge(tmp_path: Path) -> AsyncIterator[Knowledge]:
    k = Knowledge(load_config())
    yield k
    await k.close()


@pytest.fixture
async def scanned(knowledge: Knowledge, tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "billing", {"billing.py": BILLING, "web/app.ts":
                     "export function renderInvoiceTotal(total: number) {\n  return `${total}`;\n}\n"})
    await knowledge.scan(repo)
    return repo


async def test_the_most_relevant_chunk_comes_first(knowledge: Knowledge, scanned: Path) -> None:
    hits = await knowledge.retrieve("invoice total")

    assert hits[0].title == "invoice_total"
    assert (hits[0].path, hits[0].start, hits[0].end) == ("billing.py", 4, 7)
    assert hits[0].kind == "symbol"
    assert hits[0].lang == "python"
    titles = [h.title for h in hits]
    assert "send_reminder" in titles  # one of the words is enough …
    assert titles.index("invoice_total") < titles.index("send_reminder")  # … more rank higher
    assert "unrelated" not in titles
    assert "parse_config" not in titles
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] > 0
    assert "«invoice»" in hits[0].snippet
    assert "«total»" in hits[0].snippet


async def test_names_are_found_by_their_parts_and_by_prefix(knowledge: Knowledge,
                                                           scanned: Path) -> None:
    assert (await knowledge.retrieve("parse_config"))[0].title == "parse_config"
    assert (await knowledge.retrieve("renderInvoi"))[0].title == "renderInvoiceTotal"
    assert (await knowledge.retrieve("billing.py", limit=1))[0].path == "billing.py"


@pytest.mark.parametrize("query", ['foo(" OR *', 'invoice" OR "x', "NEAR(invoice total, 2)",
                                   "path:billing.py", "-invoice", "invoice AND NOT total",
                                   "total^2", "{invoice}", "invoice*", "'; DROP TABLE chunks;--"])
async def test_fts_syntax_in_the_query_is_plain_text(knowledge: Knowledge, scanned: Path,
                                                     query: str) -> None:
    hits = await knowledge.retrieve(query)
    assert all(h.path for h in hits)
    assert (await knowledge.retrieve("invoice total"))[0].title == "invoice_total"  # still intact


def test_the_match_expression_quotes_every_word() -> None:
    assert match_expression('foo(" OR *') == '"foo" OR "foo"* OR "OR" OR "fooOR" OR "fooOR"*'
    assert match_expression("parse conf") == ('"parse" OR "parse"* OR "conf" OR "conf"* OR '
                                              '"parseconf" OR "parseconf"*')
    assert match_expression("parse conf ") == ('"parse" OR "parse"* OR "conf" OR '  # finished
                                               '"parseconf" OR "parseconf"*')
    assert match_expression("a") == '"a"'  # too short to be a prefix


async def test_camel_case_names_are_found_by_their_words(knowledge: Knowledge,
                                                         scanned: Path) -> None:
    hits = await knowledge.retrieve("render invoice total")
    assert hits[0].title == "renderInvoiceTotal"


@pytest.mark.parametrize("query", ["", "   ", "*", '"" ()', "--"])
async def test_a_query_without_words_is_refused_clearly(knowledge: Knowledge, query: str) -> None:
    with pytest.raises(RelayError, match="Nothing to search for") as caught:
        await knowledge.retrieve(query)
    assert caught.value.hint


async def test_the_limit_and_the_repository_filter(knowledge: Knowledge, scanned: Path,
                                                   tmp_path: Path) -> None:
    other = make_repo(tmp_path / "other", {"invoice.go": "package x\n\nfunc InvoiceTotal() {}\n"})
    await knowledge.scan(other)

    everywhere = await knowledge.retrieve("invoice total", limit=50)
    assert {h.repo for h in everywhere} == {str(scanned.resolve()), str(other.resolve())}
    assert len(await knowledge.retrieve("invoice total", limit=1)) == 1
    only = await knowledge.retrieve("invoice total", repo=other / ".")
    assert {h.repo for h in only} == {str(other.resolve())}
    assert only[0].title == "InvoiceTotal"
    with pytest.raises(RelayError, match="between 1 and"):
        await knowledge.retrieve("invoice", limit=0)
    with pytest.raises(RelayError, match="nothing for") as caught:
        await knowledge.retrieve("invoice", repo=tmp_path)
    assert caught.value.hint is not None
    assert "knowledge scan" in caught.value.hint
