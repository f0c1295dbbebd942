"""Dock panels; each binds to one view-model."""
