"""relay-cli: the headless front end over the same Engine (never imports Qt)."""
