"""The API's router and its one pagination: every list pages the same way, with a maximum."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from rest_framework import viewsets

from console.api import urls as api_urls
from console.api.pagination import MAX_LIMIT, LimitOffsetPagination
from console.api.routers import Router
from console.models import AuditEvent, default_team_id

pytestmark = pytest.mark.django_db


def list_views() -> list[tuple[str, type]]:
    """(route name, view class) of every route whose GET lists."""
    found = []
    for pattern in api_urls.urlpatterns:
        actions = getattr(pattern.callback, "actions", {})
        if actions.get("get") == "list":
            found.append((pattern.name, pattern.callback.cls))
    return found


def test_every_list_pages_with_the_api_pagination():
    lists = list_views()

    assert {name for name, _ in lists} >= {"channel-list", "audit-list", "plugin-list"}
    assert [
        name for name, view in lists if view.pagination_class is not LimitOffsetPagination
    ] == []


def test_a_page_holds_at_most_the_maximum(api):
    team = default_team_id()  # the rows of the caller's team: the list shows them
    AuditEvent.objects.bulk_create(
        AuditEvent(actor="bob", action="channel.start", object_id=f"c{n}", team_id=team)
        for n in range(MAX_LIMIT + 2)
    )

    body = api.get("/api/v1/audit/", {"limit": MAX_LIMIT + 100}).json()

    assert len(body["results"]) == MAX_LIMIT
    assert body["count"] == MAX_LIMIT + 2
    assert f"offset={MAX_LIMIT}" in body["next"]


def test_the_default_page_is_50(api):
    team = default_team_id()
    AuditEvent.objects.bulk_create(
        AuditEvent(actor="bob", action="channel.start", object_id=f"c{n}", team_id=team)
        for n in range(60)
    )

    assert len(api.get("/api/v1/audit/").json()["results"]) == 50


def test_actions_take_no_trailing_slash_and_collections_do():
    routes = {pattern.name: str(pattern.pattern) for pattern in api_urls.urlpatterns}

    assert routes["channel-list"] == "channels/"
    assert routes["channel-detail"] == "channels/<str:name>/"
    assert routes["channel-start"] == "channels/<str:name>/start"
    assert routes["channel-offsets-copy"] == "channels/<str:name>/offsets/copy"
    assert routes["channel-revision-detail"] == "channels/<str:name>/revisions/<int:number>/"
    assert routes["plugin-detail"] == "plugins/<str:kind>/<str:type>/"


class _Start(viewsets.GenericViewSet):
    lookup_field = "name"

    from rest_framework.decorators import action

    @action(detail=True, methods=["post"])
    def start(self, request, name):
        raise AssertionError("never called")


def test_a_route_name_given_twice_is_refused():
    router = Router()
    router.register("channels", _Start, basename="channel")
    router.register("channels", _Start, basename="channel")

    with pytest.raises(ImproperlyConfigured, match="channel-start"):
        router.get_urls()


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/channels/orders/offsets",
        "/api/v1/channels/orders/offsets/copy",
        "/api/v1/channels/orders/ingest-token",
        "/api/v1/event-patterns/test",
    ],
)
def test_options_of_a_viewset_without_one_serializer_describes_it(api, url):
    response = api.options(url)

    assert response.status_code == 200
    assert "actions" not in response.json()


@pytest.mark.parametrize("url", ["/api/v1/audit/", "/api/v1/channels/", "/api/v1/plugins/"])
def test_the_browsable_api_shows_the_lists(api, url):
    response = api.get(url, HTTP_ACCEPT="text/html")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")


def test_a_bad_filter_value_is_answered_as_before_django_filter(api):
    response = api.get("/api/v1/audit/", {"since": "yesterday"})

    assert response.status_code == 400
    assert response.json() == {
        "since": [
            "Datetime has wrong format. Use one of these formats instead: "
            "YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z]."
        ]
    }
