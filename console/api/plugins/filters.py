"""The catalogue's one filter, ``?kind=``: the catalogue is a list, not a queryset, so it is
read with a serializer (django-filter filters querysets)."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.request import Request

from console.choices import PluginKind


class PluginKindQuerySerializer(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=PluginKind.choices, required=False, help_text="Only plugins of this kind."
    )


def plugin_kind(request: Request) -> str | None:
    """The ``kind`` of the request's query, if any; a 400 when it is not a kind."""
    query = PluginKindQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data.get("kind")
