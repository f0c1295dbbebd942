"""Numbered, forward-only schema migrations recorded in ``schema_version``.

Never edit a migration that has shipped: add the next number. A database whose
version is above :data:`LATEST` was written by a newer build and is refused.
"""

from __future__ import annotations

MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        repo TEXT NOT NULL,
        task TEXT NOT NULL,
        runtime TEXT NOT NULL,
        model TEXT,
        state TEXT NOT NULL,
        permission TEXT NOT NULL,
        workdir TEXT,
        branch TEXT,
        agent_session_id TEXT,
        reason TEXT,
        simulated INTEGER NOT NULL DEFAULT 0,
        owner_pid INTEGER,
        spec_json TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL
    );
    CREATE INDEX sessions_updated ON sessions(updated_ms DESC);
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        attempt INTEGER NOT NULL,
        runtime TEXT NOT NULL,
        model TEXT,
        agent_session_id TEXT,
        started_ms INTEGER NOT NULL,
        ended_ms INTEGER,
        outcome TEXT,
        exit_code INTEGER,
        input_tokens INTEGER,
        output_tokens INTEGER,
        cache_read_tokens INTEGER,
        cache_write_tokens INTEGER,
        reasoning_tokens INTEGER,
        cost_usd REAL,
        UNIQUE (session_id, attempt)
    );
    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        run_id TEXT,
        ts_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL
    );
    CREATE INDEX events_session ON events(session_id, id);
    """,
    2: """
    CREATE TABLE handoffs (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        from_run_id TEXT,
        from_entry TEXT,
        to_entry TEXT,
        reason TEXT,
        state TEXT NOT NULL,
        snapshot_sha TEXT,
        contract_dir TEXT,
        to_run_id TEXT,
        error TEXT,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL
    );
    CREATE INDEX handoffs_session ON handoffs(session_id, created_ms);
    """,
    3: """
    ALTER TABLE sessions ADD COLUMN wait_until_ms INTEGER;
    ALTER TABLE runs ADD COLUMN pid INTEGER;
    ALTER TABLE runs ADD COLUMN pid_started REAL;
    ALTER TABLE runs ADD COLUMN entry TEXT;
    CREATE TABLE requests (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        arg TEXT,
        created_ms INTEGER NOT NULL,
        taken_ms INTEGER,
        answer TEXT
    );
    CREATE INDEX requests_open ON requests(session_id, taken_ms);
    CREATE TABLE breakers (
        entry TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        until_ms INTEGER,
        reason TEXT,
        opened_ms INTEGER NOT NULL
    );
    CREATE TABLE accounts (
        provider TEXT NOT NULL,
        label TEXT NOT NULL,
        config_dir TEXT,
        auth_kind TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        PRIMARY KEY (provider, label)
    );
    """,
    4: """
    ALTER TABLE accounts ADD COLUMN preferred INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE accounts ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE accounts ADD COLUMN updated_ms INTEGER;
    CREATE TABLE limit_snapshots (
        id INTEGER PRIMARY KEY,
        entry TEXT NOT NULL,
        window TEXT NOT NULL,
        observed_ms INTEGER NOT NULL,
        used_percent REAL,
        resets_at_ms INTEGER,
        window_minutes INTEGER,
        status TEXT,
        origin TEXT NOT NULL
    );
    CREATE INDEX limit_snapshots_entry ON limit_snapshots(entry, window, observed_ms);
    CREATE TABLE budgets (
        scope TEXT NOT NULL,
        entry TEXT NOT NULL DEFAULT '*',
        limit_usd REAL NOT NULL,
        updated_ms INTEGER NOT NULL,
        PRIMARY KEY (scope, entry)
    );
    """,
    5: """
    CREATE TABLE pipeline_graphs (
        run_id TEXT PRIMARY KEY,
        graph_json TEXT NOT NULL
    );
    CREATE TABLE pipeline_runs (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        repo TEXT NOT NULL,
        state TEXT NOT NULL,
        reason TEXT,
        concurrency INTEGER NOT NULL,
        budget_usd REAL,
        base_commit TEXT,
        result_commit TEXT,
        seq INTEGER NOT NULL DEFAULT 0,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        ended_ms INTEGER
    );
    CREATE TABLE pipeline_steps (
        run_id TEXT NOT NULL,
        node_id TEXT NOT NULL,
        state TEXT NOT NULL,
        attempt INTEGER NOT NULL DEFAULT 0,
        epoch INTEGER NOT NULL DEFAULT 0,
        owner TEXT,
        lease_until_ms INTEGER,
        not_before_ms INTEGER NOT NULL DEFAULT 0,
        session_id TEXT,
        output TEXT,
        files_json TEXT,
        commit_sha TEXT,
        branch TEXT,
        error TEXT,
        cost_usd REAL,
        saves INTEGER NOT NULL DEFAULT 0,
        started_ms INTEGER,
        ended_ms INTEGER,
        seq INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (run_id, node_id)
    );
    CREATE INDEX pipeline_steps_seq ON pipeline_steps(run_id, seq);
    CREATE TABLE pipeline_log (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,
        node_id TEXT,
        ts_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,
        owner TEXT,
        epoch INTEGER,
        detail TEXT
    );
    CREATE INDEX pipeline_log_run ON pipeline_log(run_id, id);
    """,
    6: """
    ALTER TABLE sessions ADD COLUMN base_sha TEXT;
    ALTER TABLE sessions ADD COLUMN base_branch TEXT;
    CREATE TABLE review_comments (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        sha TEXT NOT NULL,
        path TEXT NOT NULL,
        line INTEGER NOT NULL,
        side TEXT NOT NULL,
        body TEXT NOT NULL,
        excerpt TEXT NOT NULL DEFAULT '',
        state TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        sent_ms INTEGER,
        run_id TEXT,
        error TEXT,
        claim TEXT,
        claimed_ms INTEGER
    );
    CREATE INDEX review_comments_session ON review_comments(session_id, state);
    """,
    7: """
    ALTER TABLE runs ADD COLUMN refused_calls INTEGER NOT NULL DEFAULT 0;
    """,
    8: """
    CREATE TABLE pipeline_trust (
        digest TEXT PRIMARY KEY,
        path TEXT NOT NULL,
        commands INTEGER NOT NULL,
        trusted_ms INTEGER NOT NULL
    );
    """,
    9: """
    CREATE TABLE audit_anchor (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        entries INTEGER NOT NULL,
        head TEXT NOT NULL,
        since_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        reset_note TEXT
    );
    """,
    # one host runs every session of a data folder and its clients ask it over the API:
    # the table through which processes asked each other to stop, hand off or answer goes
    10: """
    DROP INDEX IF EXISTS requests_open;
    DROP TABLE IF EXISTS requests;
    """,
    # the board (issue 21): projects, tasks through stages, reports, decisions, the owner's
    # comments, the sessions working on a task, the live state of hooked agent sessions and
    # each project's guarded environments
    11: """
    CREATE TABLE board_projects (
        id INTEGER PRIMARY KEY,
        slug TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        repo TEXT NOT NULL UNIQUE,
        task_seq INTEGER NOT NULL DEFAULT 0,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL
    );
    CREATE TABLE board_tasks (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES board_projects(id) ON DELETE CASCADE,
        key TEXT NOT NULL UNIQUE,
        title TEXT NOT NULL,
        stage TEXT NOT NULL CHECK (stage IN ('plan','dev','review','test','live','done')),
        next_step TEXT,
        waiting_on TEXT,
        branch TEXT,
        description TEXT,
        version INTEGER NOT NULL DEFAULT 1,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        stage_ms INTEGER NOT NULL
    );
    CREATE INDEX board_tasks_project ON board_tasks(project_id, stage);
    CREATE TABLE board_reports (
        id INTEGER PRIMARY KEY,
        task_id INTEGER NOT NULL REFERENCES board_tasks(id) ON DELETE CASCADE,
        author TEXT NOT NULL,
        session_ref TEXT,
        summary TEXT NOT NULL,
        body TEXT NOT NULL DEFAULT '',
        created_ms INTEGER NOT NULL
    );
    CREATE INDEX board_reports_task ON board_reports(task_id, id);
    CREATE TABLE board_decisions (
        id INTEGER PRIMARY KEY,
        task_id INTEGER NOT NULL REFERENCES board_tasks(id) ON DELETE CASCADE,
        text TEXT NOT NULL,
        decided_by TEXT NOT NULL,
        created_ms INTEGER NOT NULL
    );
    CREATE INDEX board_decisions_task ON board_decisions(task_id, id);
    CREATE TABLE board_comments (
        id INTEGER PRIMARY KEY,
        task_id INTEGER NOT NULL REFERENCES board_tasks(id) ON DELETE CASCADE,
        author_kind TEXT NOT NULL CHECK (author_kind IN ('owner','agent')),
        author TEXT NOT NULL,
        body TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        delivered_ms INTEGER,
        delivered_to TEXT,
        acked_ms INTEGER
    );
    CREATE INDEX board_comments_task ON board_comments(task_id, id);
    CREATE TABLE board_links (
        id INTEGER PRIMARY KEY,
        task_id INTEGER NOT NULL REFERENCES board_tasks(id) ON DELETE CASCADE,
        session_ref TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('relay','claude')),
        linked_ms INTEGER NOT NULL,
        unlinked_ms INTEGER
    );
    CREATE INDEX board_links_task ON board_links(task_id) WHERE unlinked_ms IS NULL;
    CREATE INDEX board_links_ref ON board_links(session_ref) WHERE unlinked_ms IS NULL;
    CREATE TABLE hooked_sessions (
        agent_session_id TEXT PRIMARY KEY,
        runtime TEXT NOT NULL,
        cwd TEXT NOT NULL DEFAULT '',
        state TEXT NOT NULL,
        detail TEXT NOT NULL DEFAULT '',
        needs TEXT,
        source TEXT NOT NULL DEFAULT '',
        transcript_path TEXT NOT NULL DEFAULT '',
        relay_session_id TEXT,
        todos TEXT NOT NULL DEFAULT '[]',
        started_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL
    );
    CREATE INDEX runs_agent_session ON runs(agent_session_id);
    CREATE TABLE guard_environments (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES board_projects(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('local','test','live')),
        level TEXT NOT NULL CHECK (level IN ('none','read','ask','full')),
        refs TEXT NOT NULL DEFAULT '{}',
        notes TEXT NOT NULL DEFAULT '',
        UNIQUE (project_id, name)
    );
    """,
    # talking to a session (issue 22): the session's inbox — messages queued for its agent,
    # delivered at a turn boundary, steered in, or sent as a follow-up (relay.sessions.inbox)
    12: """
    CREATE TABLE session_messages (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        body TEXT NOT NULL,
        mode TEXT NOT NULL,
        source TEXT NOT NULL DEFAULT '',
        state TEXT NOT NULL,
        how TEXT,
        attachments TEXT NOT NULL DEFAULT '[]',
        meta TEXT NOT NULL DEFAULT '{}',
        claim TEXT,
        claimed_ms INTEGER,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        delivered_ms INTEGER,
        run_id TEXT,
        error TEXT
    );
    CREATE INDEX session_messages_session ON session_messages(session_id, state);
    INSERT INTO session_messages (id, session_id, kind, body, mode, source, state, meta,
        created_ms, updated_ms)
    SELECT id, session_id, 'review', body, 'queue', 'review', 'queued',
        json_object('comment_id', id, 'sha', sha, 'path', path, 'line', line, 'side', side,
                    'excerpt', excerpt), created_ms, created_ms
    FROM review_comments WHERE state IN ('queued', 'sending');
    """,
    # archive instead of delete (issue 23): an archived session is left out of the lists
    # unless asked for (when, in seconds since the epoch; NULL: not archived)
    13: """
    ALTER TABLE sessions ADD COLUMN archived_at REAL;
    """,
}

LATEST = max(MIGRATIONS)
