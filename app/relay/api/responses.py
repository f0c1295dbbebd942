"""The local API's one scrubbing point: the JSON response class every route answers with.

:class:`ScrubbedJSONResponse` is the app's ``default_response_class``
(``relay.api.app.build_app``), so every route's body — whatever model or field it returns,
a route added later too — passes :func:`relay.core.redact.scrub_obj` as it is rendered; the
error bodies (``relay.api.errors``) are one as well. The two routes that answer otherwise
carry stored events only, already scrubbed by the writer (``core/store/writer.py``):
``GET /api/v1/events`` (orjson bytes of a page) and the SSE streams (``api/stream.py``).
``tests/api/test_routes_leak.py`` enumerates the routes and holds each to this.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from relay.core.redact import scrub_obj

__all__ = ["ScrubbedJSONResponse"]


class ScrubbedJSONResponse(JSONResponse):
    """A JSON response whose content is scrubbed of secrets before it is encoded."""

    def render(self, content: Any) -> bytes:
        return super().render(scrub_obj(content))
