"""The installer sources, checked without building anything (the build runs in ./dev test)."""
