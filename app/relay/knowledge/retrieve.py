"""User text → an FTS5 query that cannot be a syntax error.

The query is cut into words (letters, digits and ``_``; everything else separates), at most
:data:`MAX_TERMS`. Each word becomes a quoted FTS5 string, so ``OR``, ``NEAR``, ``*``,
``"``, ``(``, ``:`` and ``-`` typed by the user are just text. A word of 3 or more
characters is searched both as itself and as a prefix (``"pars"*`` finds ``parse`` and
``parser``) — except a last word followed by a space (the user finished typing it). Each
pair of neighbouring words is also searched joined (``"invoicetotal"``, and as a prefix):
FTS5's tokenizer keeps a camelCase name such as ``InvoiceTotal`` as one word, while it
splits ``invoice_total`` into two.

The terms are joined with ``OR``: a chunk needs only one of them, and ``bm25()`` ranks those
with more of them, and with rarer ones, first — the most relevant chunk comes first even
when the user's words are not all in it. The exact word is kept beside its prefix because
a prefix matching many chunks weighs next to nothing in bm25 (its IDF falls to zero).
"""

from __future__ import annotations

import re
from itertools import pairwise

from relay.core.errors import RelayError

MAX_TERMS = 32
MAX_LIMIT = 1000
PREFIX_MIN = 3
_WORD = re.compile(r"\w+")


def match_expression(query: str) -> str:
    """The FTS5 MATCH expression for ``query``.

    Raises:
        RelayError: the query has no word to search for.
    """
    words = _WORD.findall(query)[:MAX_TERMS]
    if not words:
        raise RelayError("Nothing to search for: the query is empty." if not query.strip() else
                         f"Nothing to search for in {query.strip()!r}: it has no words.",
                         'Search for words or names, e.g. `relay-cli retrieve "parse config"`.')
    finished = query[-1:].isspace()
    terms = [_terms(word, prefix=i < len(words) - 1 or not finished)
             for i, word in enumerate(words)]
    terms += [_terms(a + b, prefix=True) for a, b in pairwise(words)]
    return " OR ".join(terms)


def _terms(word: str, *, prefix: bool) -> str:
    if prefix and len(word) >= PREFIX_MIN:
        return f'"{word}" OR "{word}"*'
    return f'"{word}"'

def check_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise RelayError(f"The limit must be between 1 and {MAX_LIMIT} (got {limit}).")
    return limit
