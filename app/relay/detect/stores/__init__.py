"""Each runtime's on-disk sessions, read into Relay's event model (see ``base``)."""
