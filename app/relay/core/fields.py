"""The one rule for numbers (:mod:`relay.core.numbers`) as pydantic field types: finite, not
negative, not absurd — for every front end that builds Relay's models (a file, the
environment, MCP). Apart from :mod:`relay.core.models` so that the settings
(:mod:`relay.core.config`) load without the session and event models."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from relay.core.numbers import DELAY, SECONDS, USD

#: a time in seconds, more than 0, at most 30 days
Seconds = Annotated[float, AfterValidator(SECONDS.check)]
#: a time in seconds, 0 allowed, at most 30 days
Delay = Annotated[float, AfterValidator(DELAY.check)]
#: an amount of US dollars, 0 to 1,000,000
Usd = Annotated[float, AfterValidator(USD.check)]
