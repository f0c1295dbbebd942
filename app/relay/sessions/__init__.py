"""Sessions: worktrees, the session runner (and later handoff, contracts, verify)."""
