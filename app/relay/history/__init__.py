"""The time machine: timelines, diffs, rewind, finishing and review of sessions (Qt-free)."""
