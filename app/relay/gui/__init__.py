"""The desktop window: PySide6 only, over the same Engine the CLI uses.

Layers (after napari / qutebrowser): :mod:`relay.gui.bridge` turns core events
into Qt signals; view-models (``viewmodels/``) hold display state without
widgets; docks (``docks/``) bind to view-models; :mod:`relay.gui.shell` wires
them; :mod:`relay.gui.launch` starts the qasync loop.
"""
