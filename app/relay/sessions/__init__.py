"""Sessions: a session's life — worktree, runner, handoff, contract, decisions, approvals."""
