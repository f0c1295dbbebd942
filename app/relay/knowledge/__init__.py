"""The knowledge graph: a repository's code and what agents did, searchable (issue 8).

Qt-free. ``service.Knowledge`` is the facade (``Engine.knowledge``, ``relay-cli retrieve``);
``store`` the SQLite file (seed 000's nodes, edges, chunks and ``chunks_fts``);
``scanner`` and ``langs`` the code scanner; ``activity`` and ``facts`` what a session's
events say; ``retrieve`` turns user text into a safe FTS5 query.
"""
