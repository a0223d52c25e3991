"""Serializer fields more than one area of the API uses."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


@extend_schema_field(OpenApiTypes.OBJECT)
class ObjectField(serializers.JSONField):
    """Any JSON object (a JSON array, string, number or null is refused)."""

    default_error_messages = {"not_an_object": "Must be a JSON object."}

    def to_internal_value(self, data: Any) -> Any:
        data = super().to_internal_value(data)
        if not isinstance(data, dict):
            self.fail("not_an_object")
        return data
