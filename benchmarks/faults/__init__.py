"""Fault harnesses: what Relay does when the disk fills or it is killed."""
