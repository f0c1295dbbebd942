"""Relay's Qt-free core: events, store, bus, config, engine."""
