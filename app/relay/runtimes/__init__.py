"""Agent runtimes: one module per runtime plus the adapter contract (base)."""
