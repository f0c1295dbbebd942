"""Relay's core: the shared vocabulary and machinery every layer stands on (imports nothing above it)."""
