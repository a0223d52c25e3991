"""Channel specs: validation and normalisation through :mod:`pipelines.spec`."""

from __future__ import annotations

from typing import Any

from console.services.errors import InvalidSpec
from pipelines.spec import SpecError, validate_spec


def normalize_spec(data: Any) -> dict[str, Any]:
    """Validate ``data`` as a channel spec and return its normalised JSON form.

    The result is what a revision stores: defaults filled in, so two specs that mean
    the same compare equal. Raises :class:`InvalidSpec` with per-field errors.
    """
    try:
        spec = validate_spec(data)
    except SpecError as exc:
        raise InvalidSpec(exc.errors) from exc
    return spec.model_dump(mode="json")
