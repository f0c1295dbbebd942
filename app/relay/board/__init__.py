"""The board: projects, their tasks moving through stages, agents' reports and the owner's
comments, and the live state of every hooked agent session (seed 004; Qt-free)."""
