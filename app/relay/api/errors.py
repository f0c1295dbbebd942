"""Errors on the wire: every refusal is JSON ``{"error": {"code", "message", "hint"}}``.

The code is :func:`relay.core.errors.error_code` of the :class:`RelayError` raised, so the
client rebuilds the same class (:func:`relay.core.errors.error_from_code`); the HTTP status
says what kind of refusal it is. Never a traceback: what Relay did not expect is logged in
the data folder's log and answered as ``internal``.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.responses import JSONResponse

from relay.api.responses import ScrubbedJSONResponse
from relay.core import errors as e
from relay.core.redact import scrub_obj

log = logging.getLogger(__name__)

#: the HTTP status of each kind of refusal (the first class an error is an instance of wins)
STATUS: tuple[tuple[type[e.RelayError], int], ...] = (
    (e.ApiError, 400),
    (e.SessionNotFoundError, 404),
    (e.DetectNotFoundError, 404),
    (e.TaskNotFoundError, 404),
    (e.ProjectNotFoundError, 404),
    (e.VersionConflictError, 409),
    (e.ApprovalRequiredError, 403),
    (e.PolicyRefusedError, 403),
    (e.HandoffRefusedError, 409),
    (e.HandoffTransitionError, 409),
    (e.UnsupportedCapabilityError, 409),
    (e.MessageRefusedError, 409),
    (e.PipelineUntrustedError, 403),
    (e.PipelineInvalidError, 422),
    (e.TaskTooLargeError, 413),
    (e.ConfigError, 400),
    (e.UnknownRuntimeError, 400),
    (e.UnsafeRepositoryError, 400),
    (e.StoreError, 503),
)


def status_of(exc: e.RelayError) -> int:
    return next((status for cls, status in STATUS if isinstance(exc, cls)), 400)


def error_body(code: str, message: str, hint: str | None) -> dict[str, Any]:
    return {"error": scrub_obj({"code": code, "message": message, "hint": hint})}


def error_response(status: int, code: str, message: str, hint: str | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    return ScrubbedJSONResponse(error_body(code, message, hint), status_code=status,
                                headers=headers)


def relay_error_response(exc: e.RelayError) -> JSONResponse:
    return error_response(status_of(exc), e.error_code(exc), exc.message, exc.hint)


def unexpected_response(exc: BaseException) -> JSONResponse:
    log.error("API request failed: %r", exc, exc_info=exc)
    return error_response(500, "internal", "Relay hit an error it did not expect.",
                          "The details are in the data folder's logs/relay.log; please report it.")
