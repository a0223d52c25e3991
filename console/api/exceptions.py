"""Map service errors to HTTP responses, in the shape DRF gives field errors."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.fields import get_error_detail
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from console.services import InvalidSpec, RuntimeUnavailable


class ServiceUnavailable(APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "The runtime is unavailable; try again shortly."
    default_code = "runtime_unavailable"


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
    elif isinstance(exc, DjangoValidationError):
        exc = ValidationError(get_error_detail(exc))
    elif isinstance(exc, RuntimeUnavailable):
        exc = ServiceUnavailable(str(exc))
    return drf_exception_handler(exc, context)
