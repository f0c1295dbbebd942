"""The composition root: the Engine a front end holds, and what drives a runtime on its behalf.

The one package that knows every feature package (sessions, wallet, pipelines, detect,
history, knowledge) and wires them together; nothing below it imports it (the layers
contract in pyproject.toml).
"""
