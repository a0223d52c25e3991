"""``OPTIONS`` for the viewsets whose operations each take a body of their own."""

from __future__ import annotations

from rest_framework.metadata import SimpleMetadata


class NoSerializerMetadata(SimpleMetadata):
    """DRF's description of a view (name, description, renders, parses) without the
    ``actions`` DRF derives from a viewset's one ``serializer_class``: the offsets, ingestion
    and pattern-test viewsets have none (each operation documents its own body), so they
    answer ``OPTIONS`` as the plain views they replaced did."""

    def determine_actions(self, request, view) -> dict:
        return {}
