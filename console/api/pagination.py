"""The API's one pagination: DRF's limit/offset pages (``?limit=&offset=``) of
``{count, next, previous, results}``, 50 items by default and at most :data:`MAX_LIMIT`.

A larger ``limit`` is served as :data:`MAX_LIMIT` (DRF's behaviour, not an error): the page
says how many items there are (``count``) and where the next page is (``next``), so a client
reads a long list page after page (the console does, ``frontend/src/api/pagination.ts``).
The cap bounds the work and the body of one request whatever a client asks for.
"""

from __future__ import annotations

from rest_framework import pagination

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
"""The most items one page holds: the console asks for pages of this size (``PAGE_LIMIT``)."""


class LimitOffsetPagination(pagination.LimitOffsetPagination):
    default_limit = DEFAULT_LIMIT
    max_limit = MAX_LIMIT
    limit_query_description = (
        f"Number of results to return per page (default {DEFAULT_LIMIT}, at most {MAX_LIMIT})."
    )
