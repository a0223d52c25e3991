"""Map service errors to HTTP responses, in the shape DRF gives field errors."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import status
from rest_framework.exceptions import (
    APIException,
    NotFound,
    ParseError,
    UnsupportedMediaType,
    ValidationError,
)
from rest_framework.fields import get_error_detail
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

from console.errors import InvalidSpec, InvalidTransition, QuotaExceeded, RuntimeUnavailable
from console.services import (
    IngestBadRequest,
    IngestTooLarge,
    IngestUnavailable,
    InvalidOffsets,
    NotAnHttpChannel,
    OffsetsNotSupported,
)
from console.services.runs import InvalidRun
from console.services.workers import WorkerNotFound
from pipelines.spec.secrets import SecretDecryptionError


class ServiceUnavailable(APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "The runtime is unavailable; try again shortly."
    default_code = "runtime_unavailable"


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the channel's current spec."
    default_code = "conflict"


class QuotaReached(APIException):
    """A team's quota is reached (:class:`console.errors.QuotaExceeded`): 429 with the
    quota named, its limit, the team's use and the team."""

    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_detail = "The team has reached one of its quotas."
    default_code = "quota_exceeded"

    def __init__(self, exceeded: QuotaExceeded) -> None:
        super().__init__(str(exceeded))
        self.quota = {
            "quota": exceeded.quota,
            "limit": exceeded.limit,
            "used": exceeded.used,
            "team": exceeded.team,
        }


class BadRequest(APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "The request cannot be served."
    default_code = "bad_request"


class RequestTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request is too large."
    default_code = "too_large"


def flatten_errors(detail: object) -> dict[str, list[str]]:
    """DRF's nested error detail keyed by field path, as spec errors are.

    ``{"rules": {1: {"pattern": ["…"]}}}`` (or ``{"rules": [{}, {"pattern": ["…"]}]}``)
    becomes ``{"rules[1].pattern": ["…"]}``; a non-field error of a nested object or list
    is keyed by that object's path (``rules[1]``, ``rules``), and one of the whole body by
    ``non_field_errors``.
    """
    flat: dict[str, list[str]] = {}
    non_field = api_settings.NON_FIELD_ERRORS_KEY

    def walk(value: object, path: str) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if isinstance(key, int):  # a list's errors by item (ListSerializer, ListField)
                    walk(inner, f"{path}[{key}]")
                elif str(key) == non_field:
                    walk(inner, path)
                else:
                    walk(inner, f"{path}.{key}" if path else str(key))
        elif isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value):
            for index, inner in enumerate(value):
                walk(inner, f"{path}[{index}]")
        elif isinstance(value, list):
            flat.setdefault(path or non_field, []).extend(str(item) for item in value)
        else:
            flat.setdefault(path or non_field, []).append(str(value))

    walk(detail, "")
    return flat


def spec_error_paths(errors: dict[str, list[str]], prefix: str = "spec") -> dict[str, list[str]]:
    """Key each spec error by its full path in the request body.

    ``{"transforms[0].config.pattern": [...]}`` becomes
    ``{"spec.transforms[0].config.pattern": [...]}``; an error about the spec as a whole
    (path ``""``) is keyed ``"spec"``.
    """
    flat: dict[str, list[str]] = {}
    for path, messages in errors.items():
        if not path:
            key = prefix
        elif path.startswith("["):
            key = f"{prefix}{path}"
        else:
            key = f"{prefix}.{path}"
        flat.setdefault(key, []).extend(str(message) for message in messages)
    return flat


def exception_handler(exc: Exception, context: dict) -> Response | None:
    """DRF's handler, taught the services' errors."""
    if isinstance(exc, InvalidSpec):
        exc = ValidationError(spec_error_paths(exc.errors))
    elif isinstance(exc, (InvalidOffsets, InvalidRun)):
        exc = ValidationError(exc.errors)
    elif isinstance(exc, WorkerNotFound):
        exc = NotFound(str(exc))
    elif isinstance(exc, OffsetsNotSupported):
        exc = BadRequest(str(exc))
    elif isinstance(exc, DjangoValidationError):
        exc = ValidationError(get_error_detail(exc))
    elif isinstance(exc, (RuntimeUnavailable, IngestUnavailable)):
        exc = ServiceUnavailable(str(exc))
    elif isinstance(exc, SecretDecryptionError):
        # A configuration fault of this deployment (a key missing from SLUICE_SECRETS_KEY),
        # not a bad request: the operator fixes the environment and the request succeeds.
        exc = ServiceUnavailable(f"Stored secrets cannot be read: {exc}.", code="secrets_key")
    elif isinstance(exc, QuotaExceeded):
        exc = QuotaReached(exc)
    elif isinstance(exc, (NotAnHttpChannel, InvalidTransition)):
        exc = Conflict(str(exc))
    elif isinstance(exc, IngestTooLarge):
        exc = RequestTooLarge(str(exc))
    elif isinstance(exc, RequestDataTooBig):
        # Django refuses to read a body over DATA_UPLOAD_MAX_MEMORY_SIZE (SLUICE_MAX_REQUEST_BYTES);
        # left alone it becomes Django's HTML "400 Bad Request" page.
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        exc = RequestTooLarge(f"The body is over the limit of {limit} bytes.")
    elif isinstance(exc, IngestBadRequest):
        exc = (
            UnsupportedMediaType("", str(exc))
            if exc.unsupported_media_type
            else ParseError(str(exc))
        )
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, QuotaReached):
        response.data = {"detail": response.data["detail"], **exc.quota}
    return response
