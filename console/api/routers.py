"""The API's router: DRF's ``SimpleRouter`` with the URL spelling ``/api/v1/`` has always had.

* Collections and items end in a slash (``channels/``, ``channels/{name}/``); actions do not
  (``channels/{name}/start``, ``channels/{name}/offsets/copy``).
* Path converters, not regexes (``<str:name>``, ``<int:number>``): a viewset names its
  lookup's converter in ``lookup_value_converter``, a nested prefix spells its own
  (``channels/<str:name>/revisions``).
* Each area has its own viewset, and the areas that hang under a channel
  (``channels/{name}/offsets``, ``…/events``) register under the ``channels`` prefix with the
  ``channel`` basename, so their routes are named like the channel's own
  (``channel-offsets``). Several viewsets may share a basename; a route name given twice is
  an error when the URLs are built.
"""

from __future__ import annotations

from typing import cast

from django.core.exceptions import ImproperlyConfigured
from django.urls import URLPattern
from rest_framework.routers import DynamicRoute, SimpleRouter


class Router(SimpleRouter):
    def __init__(self) -> None:
        super().__init__(trailing_slash=True, use_regex_path=False)
        # Actions take no trailing slash: the dynamic routes drop it.
        self.routes = [
            route._replace(url=route.url.replace("{trailing_slash}", ""))
            if isinstance(route, DynamicRoute)
            else route
            for route in self.routes
        ]

    def is_already_registered(self, new_basename: str) -> bool:
        return False  # shared basenames are allowed; get_urls refuses a repeated route name

    def get_urls(self) -> list:
        urls = super().get_urls()
        # A SimpleRouter makes only URLPatterns, each named after its route: names are str.
        names = [cast(str, cast(URLPattern, url).name) for url in urls]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ImproperlyConfigured(f"API route names given twice: {', '.join(repeated)}")
        return urls
