"""Relay: run AI coding agents in worktrees and hand tasks between providers."""

__version__ = "0.1.0"
