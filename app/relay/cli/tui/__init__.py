"""relay-cli tui: a full-screen terminal client of the host's API (Textual).

A front end like the window, for an SSH session or a terminal person: it speaks to the host
through :class:`relay.api.client.RelayClient` only (never the engine or the store) —
:mod:`.feed` keeps the sessions live from the host's event stream, :mod:`.app` lists them,
:mod:`.session` shows one (stream, queued messages, composer), :mod:`.composer` and
:mod:`.dialogs` are its parts, :mod:`.command` is the command.
"""
