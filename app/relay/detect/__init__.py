"""Detect and adopt: the agents already on this machine, their intent, and taking them over.

Qt-free. Layout (docs/architecture.md, "Detect and adopt"):

- ``model``      the value types every part and every view speaks
- ``processes``  live agent processes (psutil) matched by per-runtime signatures
- ``stores/``    each runtime's on-disk sessions → Relay events + what could not be read
- ``lift``       intent and state of one session from its events (plan, todos, files…)
- ``adopt``      a signed continuation brief and a Relay session that carries the work on
- ``ambient``    the watcher that announces new, waiting and blocked sessions
- ``service``    :class:`Detector`, the facade the engine, the CLI and the GUI call
"""
