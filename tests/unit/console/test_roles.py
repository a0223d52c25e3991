"""Roles: viewer reads, operator also operates, editor also edits; the API, the admin and
``manage.py sluice_role`` agree. The matrix is built from the URLconf, so a new API route
without a rule here fails."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import URLPattern, reverse
from rest_framework import views
from rest_framework.authtoken.models import Token
from rest_framework.response import Response
from rest_framework.test import APIClient, APIRequestFactory, force_authenticate

from console import permissions, services
from console.api import urls as api_urls
from console.choices import TargetState
from console.models import Channel, Worker
from console.permissions import ADMIN, EDITOR, OPERATOR, ROLE_PERMISSIONS, ROLES, VIEWER

pytestmark = pytest.mark.django_db

IDENTITIES = ("anonymous", "no-role", VIEWER, OPERATOR, EDITOR, "superuser")

#: Who may do what: the capability each role brings.
ALLOWED = {
    "view": {VIEWER, OPERATOR, EDITOR, "superuser"},
    "operate": {OPERATOR, "superuser"},
    "edit": {EDITOR, "superuser"},
    "authenticated": {"no-role", VIEWER, OPERATOR, EDITOR, "superuser"},
    "manage": {"superuser"},  # a team admin's (test_service_accounts: the admin role)
    "site-admin": {"superuser"},  # never a role's (test_quotas: a team admin is refused too)
    "site": {"superuser"},  # no role's: a site admin's alone (test_team_reach)
}

#: (route name, HTTP method) → what it needs. ``ingest`` is HTTP ingestion, whose
#: authentication (the channel's token) is not the roles' business: only "anonymous is
#: refused" is checked for it.
RULES = {
    ("channel-list", "get"): "view",
    ("channel-list", "post"): "edit",
    ("channel-detail", "get"): "view",
    ("channel-detail", "put"): "edit",
    ("channel-detail", "patch"): "edit",
    ("channel-detail", "delete"): "edit",
    ("channel-start", "post"): "operate",
    ("channel-stop", "post"): "operate",
    ("channel-pause", "post"): "operate",
    ("channel-resume", "post"): "operate",
    ("channel-restart", "post"): "operate",
    ("channel-deploy", "get"): "view",
    ("channel-deploy", "post"): "operate",
    ("channel-bulk", "post"): "operate",  # a stop here; delete needs editor (test_api_fleet)
    ("channel-status", "get"): "view",
    ("channel-preview", "get"): "view",
    ("channel-tail", "get"): "view",
    ("channel-events", "post"): "ingest",
    ("channel-ingest-token", "get"): "view",
    ("channel-ingest-token", "post"): "edit",
    ("channel-ingest-token", "delete"): "edit",
    ("channel-offsets", "get"): "view",
    ("channel-offsets", "patch"): "operate",
    ("channel-offsets", "delete"): "operate",
    ("channel-offsets-copy", "post"): "operate",
    ("channel-offsets-mirrormaker2", "get"): "view",
    ("channel-offsets-mirrormaker2", "post"): "operate",
    ("channel-discovery", "get"): "view",
    ("channel-discovery", "put"): "edit",
    ("channel-replay-list", "get"): "view",
    ("channel-replay-list", "post"): "operate",
    ("channel-replay-detail", "get"): "view",
    ("channel-replay-targets", "get"): "view",
    ("channel-replay-detail", "delete"): "operate",
    ("channel-lifecycle-list", "get"): "view",
    ("channel-revision-list", "get"): "view",
    ("channel-revision-detail", "get"): "view",
    ("channel-revision-diff", "get"): "view",
    ("channel-dead-letter-list", "get"): "view",
    ("channel-dead-letter-detail", "get"): "view",
    ("channel-dead-letter-redrive", "post"): "operate",
    ("cluster", "get"): "view",
    ("health", "get"): "view",
    ("channel-history", "get"): "view",
    ("worker-list", "get"): "view",
    ("worker-detail", "get"): "view",
    ("worker-detail", "delete"): "operate",  # forget (w1 has no heartbeat: DEAD)
    ("worker-drain", "post"): "operate",
    ("worker-undrain", "post"): "operate",
    ("plugin-list", "get"): "view",
    ("plugin-detail", "get"): "view",
    ("plugin-validate", "post"): "view",
    ("plugin-validate-by-type", "post"): "view",
    ("event-pattern-test", "post"): "view",
    ("event-pattern-test-rules", "post"): "view",
    ("me", "get"): "authenticated",
    ("audit-list", "get"): "view",
    ("schema-subject-list", "get"): "view",
    ("schema-subject-detail", "get"): "view",
    ("schema-subject-versions", "get"): "view",
    ("schema-subject-diff", "get"): "view",
    ("schema-subject-shape", "get"): "view",
    ("schema-subject-list", "post"): "edit",
    ("schema-subject-check", "post"): "view",
    ("team-list", "get"): "authenticated",
    ("team-detail", "get"): "authenticated",
    ("team-detail", "patch"): "site-admin",
    ("team-service-account-list", "get"): "manage",
    ("team-service-account-list", "post"): "manage",
    ("team-service-account-detail", "delete"): "manage",
    ("team-reach", "get"): "authenticated",
    ("team-reach", "put"): "site",
    ("team-reach", "patch"): "site",
}

#: Path arguments naming things that exist (see the ``world`` fixture).
KWARGS = {
    "name": "orders",
    "worker_id": "w1",
    "kind": "source",
    "type": "kafka",
    "number": 1,
    "id": "00000000-0000-0000-0000-000000000000",
    "letter_id": "kafka:orders-dead:0:1",
    "team": "default",
}
HTTP_METHODS = ("get", "post", "put", "patch", "delete")


def api_routes() -> list[tuple[str, str, list[str]]]:
    """Every (route name, method, path arguments) the API's URLconf serves."""
    found = []
    for pattern in api_urls.urlpatterns:
        assert isinstance(pattern, URLPattern), "the API's URLconf is flat"
        callback = pattern.callback
        if hasattr(callback, "actions"):  # a viewset: its method → action map
            methods = list(callback.actions)
        else:
            methods = [m for m in HTTP_METHODS if hasattr(callback.view_class, m)]
        for method in methods:
            found.append((pattern.name, method, list(pattern.pattern.converters)))
    return found


ROUTES = api_routes()


def test_every_api_route_has_a_rule():
    served = {(name, method) for name, method, _ in ROUTES}

    assert served - set(RULES) == set(), "add the new routes to RULES (and to the views)"
    assert set(RULES) - served == set(), "remove the rules of routes that are gone"


@pytest.fixture
def world(spec, runtime):
    """Stopped channels ``orders`` (revision 1) and ``old``, and a runtime worker ``w1``."""
    services.create_channel(name="orders", spec=spec)
    services.create_channel(name="old", spec=spec)
    Worker.objects.create(worker_id="w1", host="host-1")


def client_for(identity: str, django_user_model) -> APIClient:
    client = APIClient()
    if identity == "anonymous":
        return client
    if identity == "superuser":
        user = django_user_model.objects.create_superuser("root", password="root-pass-123")
    else:
        user = django_user_model.objects.create_user(identity, password="s3cret-pass")
        if identity in ROLES:
            permissions.grant_role(user, identity)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def body_for(name: str, method: str, spec: dict) -> dict:
    """A request body that makes sense for the route (the outcome past the permission
    check may still be 4xx: a stopped channel cannot pause)."""
    if (name, method) == ("channel-list", "post"):
        return {"name": "fresh", "spec": spec}
    if name == "channel-detail" and method in ("put", "patch"):
        return {"name": "orders", "description": "changed", "spec": spec}
    if name == "plugin-validate":
        return {"config": {"bootstrap_servers": "localhost:9092", "topics": ["orders"]}}
    if name == "plugin-validate-by-type":  # kafka is a source and a sink: 400 asks which
        return {"config": {}}
    if (name, method) == ("channel-offsets", "patch"):
        return {
            "offsets": [{"partition": {"topic": "orders", "partition": 0}, "offset": {"offset": 1}}]
        }
    if name == "event-pattern-test":
        return {"pattern": {"source": ["a"]}, "event": {"source": "a"}}
    if name == "event-pattern-test-rules":
        return {"rules": [{"name": "a", "pattern": {"source": ["a"]}}], "event": {"source": "a"}}
    if name in ("schema-subject-list", "schema-subject-check") and method == "post":
        return {"subject": "roles-value", "schema": '"string"'}
    if name == "channel-offsets-copy":
        return {"from_channel": "old"}
    if name == "channel-discovery":
        return {"enabled": True}
    if (name, method) == ("team-detail", "patch"):
        return {"max_channels": 100}
    if (name, method) == ("team-service-account-list", "post"):
        return {"name": "ci", "role": "viewer"}
    if name == "team-reach" and method in ("put", "patch"):
        return {"topic_prefixes": ["orders"]}
    if name == "channel-bulk":
        return {"action": "stop", "names": ["orders"]}
    if name == "channel-dead-letter-redrive":
        return {"ids": ["kafka:orders-dead:0:1"]}
    return {}


@pytest.mark.parametrize("identity", IDENTITIES)
@pytest.mark.parametrize(("name", "method", "args"), ROUTES, ids=[f"{n}-{m}" for n, m, _ in ROUTES])
def test_the_api_allows_each_role_exactly_its_part(
    world, spec, django_user_model, identity, name, method, args
):
    rule = RULES[(name, method)]
    url = reverse(f"api:{name}", kwargs={arg: KWARGS[arg] for arg in args})
    client = client_for(identity, django_user_model)

    response = getattr(client, method)(url, body_for(name, method, spec), format="json")

    if identity == "anonymous":
        assert response.status_code == 401, response.content
        return
    if rule == "ingest":
        return  # authenticated by the channel's token, not by roles
    if identity in ALLOWED[rule]:
        assert response.status_code not in (401, 403), response.content
    else:
        assert response.status_code == 403, response.content
        detail = response.json()["detail"]
        if rule == "site-admin":
            assert detail == "Only a site admin sets a team's quotas."
            return
        if rule == "site":
            assert "You need the permission console.change_team" in detail
            return
        needed = {"view": VIEWER, "operate": OPERATOR, "edit": EDITOR, "manage": ADMIN}[rule]
        assert f"You need the {needed} role (console." in detail


def test_a_refusal_names_the_role_and_permission(world, django_user_model, runtime):
    viewer = client_for(VIEWER, django_user_model)

    response = viewer.post("/api/v1/channels/orders/restart")

    assert response.status_code == 403
    assert response.json() == {
        "detail": "You need the operator role (console.operate_channel) to restart channels."
    }
    assert runtime.calls_named("restart") == []


def test_an_operator_really_starts_and_stops_but_cannot_edit(world, spec, django_user_model):
    operator = client_for(OPERATOR, django_user_model)

    assert operator.post("/api/v1/channels/orders/start").status_code == 202
    assert Channel.objects.get(name="orders").target_state == TargetState.RUNNING
    assert operator.post("/api/v1/channels/orders/stop").status_code == 202
    assert Channel.objects.get(name="orders").target_state == TargetState.STOPPED

    refused = operator.patch("/api/v1/channels/orders/", {"description": "x"}, format="json")
    assert refused.json()["detail"] == (
        "You need the editor role (console.change_channel) to change channels."
    )
    assert operator.delete("/api/v1/channels/orders/").status_code == 403
    assert Channel.objects.filter(name="orders").exists()


def test_an_editor_creates_changes_and_deletes_but_cannot_start(
    world, spec, django_user_model, runtime
):
    editor = client_for(EDITOR, django_user_model)

    created = editor.post("/api/v1/channels/", {"name": "fresh", "spec": spec}, format="json")
    assert created.status_code == 201
    changed = editor.patch("/api/v1/channels/fresh/", {"description": "new"}, format="json")
    assert changed.json()["description"] == "new"

    refused = editor.post("/api/v1/channels/fresh/start")
    assert refused.status_code == 403
    assert "operator role (console.operate_channel) to start" in refused.json()["detail"]
    assert runtime.calls_named("deploy") == []

    assert editor.delete("/api/v1/channels/fresh/").status_code == 204


def test_a_user_without_a_role_is_told_to_get_one(world, django_user_model):
    response = client_for("no-role", django_user_model).get("/api/v1/channels/")

    assert response.json() == {
        "detail": "You need the viewer role (console.view_channel) to see channels."
    }


def test_operator_and_editor_together_can_do_both(world, django_user_model):
    user = django_user_model.objects.create_user("both", password="s3cret-pass")
    permissions.grant_role(user, OPERATOR)
    permissions.grant_role(user, EDITOR)
    client = APIClient()
    client.force_authenticate(user)

    changed = client.patch("/api/v1/channels/orders/", {"description": "x"}, format="json")
    assert changed.status_code == 200
    assert client.post("/api/v1/channels/orders/start").status_code == 202


def test_a_single_permission_granted_by_hand_is_honoured(world, django_user_model):
    """Permissions, not role names, are checked: a site may compose its own groups. A grant
    by hand holds in the teams the user sees, and sees nothing by itself."""
    user = django_user_model.objects.create_user("custom", password="s3cret-pass")
    user.user_permissions.add(Permission.objects.get(codename="operate_channel"))
    client = APIClient()
    client.force_authenticate(user)

    assert client.get("/api/v1/channels/").status_code == 403  # no view permission
    assert client.post("/api/v1/channels/orders/start").status_code == 404  # in no team of theirs

    permissions.grant_role(user, VIEWER)  # in the default team, where orders is
    assert client.post("/api/v1/channels/orders/start").status_code == 202


# -- a view that declares nothing (e.g. one added later) -------------------------------------


class Undeclared(views.APIView):
    def get(self, request):
        return Response({"ok": True})

    def post(self, request):
        return Response({"ok": True})


@pytest.mark.parametrize(
    ("identity", "method", "expected"),
    [
        ("no-role", "get", 403),
        (VIEWER, "get", 200),
        (EDITOR, "post", 403),
        (OPERATOR, "post", 403),
        ("superuser", "post", 200),
    ],
)
def test_an_undeclared_view_reads_with_view_permission_and_refuses_writes(
    django_user_model, identity, method, expected
):
    if identity == "superuser":
        user = django_user_model.objects.create_superuser("root", password="x")
    else:
        user = django_user_model.objects.create_user(identity, password="x")
        if identity in ROLES:
            permissions.grant_role(user, identity)
    request = getattr(APIRequestFactory(), method)("/api/v1/undeclared/")
    force_authenticate(request, user=user)

    response = Undeclared.as_view()(request)

    assert response.status_code == expected
    if expected == 403 and method == "post":
        assert "reserved to superusers" in response.data["detail"]


# -- /api/v1/me/ -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("identity", "roles", "can"),
    [
        ("no-role", [], {"view": False, "operate": False, "operate_workers": False, "edit": False}),
        (
            VIEWER,
            [VIEWER],
            {"view": True, "operate": False, "operate_workers": False, "edit": False},
        ),
        (
            OPERATOR,
            [OPERATOR],
            {"view": True, "operate": True, "operate_workers": True, "edit": False},
        ),
        (
            EDITOR,
            [EDITOR],
            {"view": True, "operate": False, "operate_workers": False, "edit": True},
        ),
        ("superuser", [], {"view": True, "operate": True, "operate_workers": True, "edit": True}),
    ],
)
def test_me_says_who_is_calling_and_what_they_may_do(django_user_model, identity, roles, can):
    response = client_for(identity, django_user_model).get(reverse("api:me"))

    assert response.status_code == 200
    in_default = identity in ROLES or identity == "superuser"  # a superuser sees every team
    assert response.json() == {
        "username": "root" if identity == "superuser" else identity,
        "roles": roles,
        "teams": [{"name": "default", "roles": roles, "can": can}] if in_default else [],
        "is_superuser": identity == "superuser",
        "can": can,
    }


def test_me_lists_several_roles_in_order(django_user_model):
    user = django_user_model.objects.create_user("multi", password="x")
    permissions.grant_role(user, EDITOR)
    permissions.grant_role(user, VIEWER)
    client = APIClient()
    client.force_authenticate(user)

    assert client.get("/api/v1/me/").json()["roles"] == [VIEWER, EDITOR]


def test_me_needs_authentication(anon):
    assert anon.get("/api/v1/me/").status_code == 401


def test_me_is_in_the_schema(anon):
    paths = anon.get("/api/schema/", {"format": "json"}).json()["paths"]

    assert "200" in paths["/api/v1/me/"]["get"]["responses"]


# -- what each role grants ----------------------------------------------------------------------


def test_every_permission_a_role_grants_exists():
    """Roles are code, checked by name: a misspelt permission would silently grant nothing."""
    rows = Permission.objects.values_list("content_type__app_label", "codename")
    existing = {f"{app}.{codename}" for app, codename in rows}
    for role in ROLES:
        assert ROLE_PERMISSIONS[role] <= existing, role


def test_the_roles_grant_their_parts_and_a_team_admin_everything():
    assert "console.operate_channel" not in ROLE_PERMISSIONS[EDITOR]
    assert "console.add_channel" not in ROLE_PERMISSIONS[OPERATOR]
    assert ROLE_PERMISSIONS[VIEWER] < ROLE_PERMISSIONS[OPERATOR]
    assert ROLE_PERMISSIONS[ADMIN] == (
        ROLE_PERMISSIONS[OPERATOR] | ROLE_PERMISSIONS[EDITOR] | {permissions.MANAGE_TEAM}
    )


# -- manage.py sluice_role -------------------------------------------------------------------


def sluice_role(*args: str) -> str:
    out = io.StringIO()
    call_command("sluice_role", *args, stdout=out)
    return out.getvalue()


def test_sluice_role_gives_and_takes_roles(django_user_model):
    alice = django_user_model.objects.create_user("alice", password="x")

    assert sluice_role("alice", "operator", "viewer") == (
        "alice: roles viewer, operator in default\n"
    )
    alice.refresh_from_db()
    assert alice.is_staff  # may sign in to the admin, which applies the same permissions
    assert alice.has_perm("console.operate_channel")

    assert sluice_role("alice", "operator", "--remove") == "alice: roles viewer in default\n"
    assert not django_user_model.objects.get(pk=alice.pk).has_perm("console.operate_channel")
    assert sluice_role("alice") == "alice: roles viewer in default\n"
    assert sluice_role("--list") == "alice: viewer in default\n"


def test_sluice_role_gives_roles_in_a_named_team(django_user_model):
    django_user_model.objects.create_user("alice", password="x")

    with pytest.raises(CommandError, match=r"No team 'pay'\. Add --create-team"):
        sluice_role("alice", "editor", "--team", "pay")
    assert sluice_role("alice", "admin", "--team", "pay", "--create-team") == (
        "alice: roles admin in pay\n"
    )
    sluice_role("alice", "viewer")
    assert sluice_role("--list") == "alice: viewer in default; admin in pay\n"
    with pytest.raises(ValidationError):
        sluice_role("alice", "viewer", "--team", "Not A Name", "--create-team")


def test_sluice_role_creates_a_user_on_request(django_user_model, monkeypatch):
    monkeypatch.setenv("SLUICE_USER_PASSWORD", "chosen-pass-123")

    output = sluice_role("bob", "editor", "--create")

    bob = django_user_model.objects.get(username="bob")
    assert bob.check_password("chosen-pass-123")
    assert "chosen-pass-123" not in output
    assert output.endswith("bob: roles editor in default\n")


def test_sluice_role_refuses_unknown_users_and_roles(django_user_model):
    with pytest.raises(CommandError, match="No user 'ghost'"):
        sluice_role("ghost", "viewer")
    django_user_model.objects.create_user("alice", password="x")
    with pytest.raises(CommandError, match="Unknown role\\(s\\) owner"):
        sluice_role("alice", "owner")


def test_ensure_admin_still_makes_a_superuser_who_may_do_everything(monkeypatch):
    monkeypatch.setenv("SLUICE_ADMIN_PASSWORD", "from-the-env-123")
    call_command("ensure_admin", stdout=io.StringIO())

    client = APIClient()
    client.login(username="admin", password="from-the-env-123")

    assert client.get("/api/v1/me/").json()["can"] == {
        "view": True,
        "operate": True,
        "operate_workers": True,
        "edit": True,
    }


# -- the admin -------------------------------------------------------------------------------

CHANGELIST = "/admin/console/channel/"


def staff_client(client, django_user_model, role: str):
    user = django_user_model.objects.create_user(role, password="x", is_staff=True)
    permissions.grant_role(user, role)
    client.force_login(user)
    return client


def change_url(channel: Channel) -> str:
    return f"{CHANGELIST}{channel.pk}/change/"


def bulk(client, action: str, channel: Channel):
    return client.post(
        CHANGELIST, {"action": action, "_selected_action": [str(channel.pk)]}, follow=True
    )


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_admin_viewer_sees_but_cannot_operate_or_change(client, django_user_model, world):
    channel = Channel.objects.get(name="orders")
    viewer = staff_client(client, django_user_model, VIEWER)

    changelist = viewer.get(CHANGELIST)
    page = viewer.get(change_url(channel))

    assert changelist.status_code == 200
    assert "start_channels" not in changelist.content.decode()
    assert page.status_code == 200
    assert "sluice-lifecycle" not in page.content.decode()
    assert 'name="_save"' not in page.content.decode()
    forced = bulk(viewer, "start_channels", channel)
    assert "You need the operator role (console.operate_channel) to start channels." in messages_of(
        forced
    )
    button = viewer.post(f"{CHANGELIST}{channel.pk}/lifecycle/start/")
    assert button.status_code == 403
    assert b"operator role" in button.content
    changed = viewer.post(change_url(channel), {"name": "orders", "description": "x"})
    assert changed.status_code == 403
    assert Channel.objects.get(pk=channel.pk).target_state == TargetState.STOPPED
    for model in ("connector", "task", "worker", "lifecycleevent", "auditevent"):
        assert viewer.get(f"/admin/console/{model}/").status_code == 200
        assert viewer.get(f"/admin/console/{model}/add/").status_code == 403


def test_admin_staff_without_a_role_sees_nothing(client, django_user_model, world):
    user = django_user_model.objects.create_user("staff", password="x", is_staff=True)
    client.force_login(user)

    assert client.get(CHANGELIST).status_code == 403
    assert client.get("/admin/console/worker/").status_code == 403
    pk = Channel.objects.get(name="orders").pk
    assert client.post(f"{CHANGELIST}{pk}/lifecycle/start/").status_code == 404  # in no team
    assert Channel.objects.get(pk=pk).target_state == TargetState.STOPPED


def test_admin_operator_starts_but_cannot_change(client, django_user_model, world, runtime):
    channel = Channel.objects.get(name="orders")
    operator = staff_client(client, django_user_model, OPERATOR)

    page = operator.get(change_url(channel)).content.decode()
    assert page.count('class="sluice-lifecycle"') == 5
    assert 'name="_save"' not in page

    response = bulk(operator, "start_channels", channel)
    assert "Asked 1 channel(s) to start: orders." in messages_of(response)
    assert Channel.objects.get(pk=channel.pk).target_state == TargetState.RUNNING
    assert runtime.calls_named("deploy")

    operator.post(f"{CHANGELIST}{channel.pk}/lifecycle/stop/")
    assert Channel.objects.get(pk=channel.pk).target_state == TargetState.STOPPED

    changed = operator.post(change_url(channel), {"name": "orders", "description": "x"})
    assert changed.status_code == 403
    assert operator.post(f"{CHANGELIST}{channel.pk}/delete/", {"post": "yes"}).status_code == 403
    assert operator.get(f"{CHANGELIST}add/").status_code == 403


def test_admin_editor_changes_but_cannot_start(client, django_user_model, world, spec, runtime):
    channel = Channel.objects.get(name="orders")
    editor = staff_client(client, django_user_model, EDITOR)

    page = editor.get(change_url(channel)).content.decode()
    assert "sluice-lifecycle" not in page
    assert "start_channels" not in editor.get(CHANGELIST).content.decode()

    saved = editor.post(
        change_url(channel),
        {
            "description": "edited",
            "spec": json.dumps(spec),
            "revisions-TOTAL_FORMS": "0",
            "revisions-INITIAL_FORMS": "0",
        },
    )
    assert saved.status_code == 302, saved.content.decode()[:2000]
    assert Channel.objects.get(pk=channel.pk).description == "edited"

    forced = bulk(editor, "start_channels", channel)
    assert "You need the operator role" in " ".join(messages_of(forced))
    assert editor.post(f"{CHANGELIST}{channel.pk}/lifecycle/start/").status_code == 403
    assert Channel.objects.get(pk=channel.pk).target_state == TargetState.STOPPED
    assert runtime.calls_named("deploy") == []
