"""The cross-team matrix (issue 33): every route of the REST API and of the Kafka Connect facade,
by every role, with the object's team being the caller's own or another's, plus ``/metrics`` and the
admin. Built from the URLconfs, as the roles' matrix is (test_roles), so a new route is in it.

Team ``bravo`` owns the objects the routes name (channels ``bravo-orders`` and ``bravo-old``, a
service account ``bravo-orders``) and a runtime connector on worker ``w1``; team ``alpha`` owns
``mine``. The roles' matrix's requests are reused with bravo's names in them.

* **Own team** (the caller holds the role in bravo): the role's rules hold there as they do in
  the default team (403 naming the role when it lacks the permission, never 401 or 403 when it
  has it).
* **Another team** (the caller holds the role in alpha only): a route naming bravo's object
  answers exactly as for a name nothing holds: a 404, or the 403 of a role the caller holds
  nowhere (the same for any name: it tells nothing of the object); a route naming none
  (lists, counts, workers, the cluster, the audit trail, bulk actions and their filters) never
  shows bravo's names, team or description, and nothing of bravo's changes, whatever was
  asked.
"""

from __future__ import annotations

import itertools
import json

import pytest
from django.urls import reverse

from console import permissions, services
from console.api.connect import urls as connect_urls
from console.choices import ConnectorState
from console.models import (
    CHANNEL_NAME_TAKEN,
    AuditEvent,
    Channel,
    Connector,
    Revision,
    Team,
    Worker,
)
from console.permissions import ADMIN, EDITOR, OPERATOR, ROLES, VIEWER
from console.services import service_accounts
from tests.unit.console.members import member
from tests.unit.console.test_roles import KWARGS, ROUTES, RULES, body_for

pytestmark = pytest.mark.django_db

OWN, OTHER = "alpha", "bravo"
SECRET = "BRAVO-SECRET-DESCRIPTION"
ORDERS, OLD = "bravo-orders", "bravo-old"
#: What of bravo's must never reach a caller outside it: its names, its team's, a marker.
LEAKS = (ORDERS, OLD, f'"{OTHER}"', SECRET)

#: The roles each rule needs, within the object's team (a team admin holds every role's part).
ALLOWED = {
    "view": {VIEWER, OPERATOR, EDITOR, ADMIN},
    "operate": {OPERATOR, ADMIN},
    "edit": {EDITOR, ADMIN},
    "authenticated": set(ROLES),
    "manage": {ADMIN},
    "site": set(),  # a site admin's alone (a team's reach), never a role's
    "site-admin": set(),  # likewise (a team's quotas)
}

#: Path arguments that name bravo's objects: a route with one of them names an object.
NAMING = {"name", "team"}
#: The routes' path arguments, naming bravo's objects (its team where a route names a team).
KWARGS_BRAVO = {**KWARGS, "name": ORDERS, "team": OTHER}
#: The same arguments naming nothing that exists.
NOWHERE = {**KWARGS, "name": "nothing-here", "team": "no-such-team"}


def answer(response, kwargs: dict) -> tuple[int, str]:
    """A response's status and body with the names asked for taken out (a 404 may echo them)."""
    text = response.content.decode()
    for arg in sorted(NAMING, key=lambda arg: -len(str(kwargs[arg]))):  # "bravo-orders" first
        text = text.replace(str(kwargs[arg]), f"<{arg}>")
    return response.status_code, text


@pytest.fixture
def world(spec, runtime) -> dict[str, Team]:
    alpha = Team.objects.create(name=OWN)
    bravo = Team.objects.create(name=OTHER)
    # Alpha's own channel mentions none of bravo's names (the test spec reads "orders").
    own_spec = json.loads(json.dumps(spec).replace("orders", "alpha-events"))
    services.create_channel(name="mine", spec=own_spec, team=alpha)
    for name in (ORDERS, OLD):
        services.create_channel(name=name, spec=spec, team=bravo, description=SECRET)
    worker = Worker.objects.create(worker_id="w1", host="host-1")
    Connector.objects.create(
        channel=Channel.objects.get(name=ORDERS),
        runtime_id=ORDERS,
        state=ConnectorState.RUNNING,
        worker=worker,
    )
    service_accounts.issue(bravo, name=ORDERS, role=VIEWER, expires_in_days=30)
    return {OWN: alpha, OTHER: bravo}


def bravo_untouched(runtime) -> None:
    """Nothing of bravo's changed: its channels, their revisions, its service account, and the
    runtime was asked nothing about them."""
    for channel in Channel.objects.filter(team__name=OTHER):
        assert (channel.target_state, channel.description) == ("STOPPED", SECRET), channel
        assert not channel.labels
    assert Revision.objects.filter(channel__team__name=OTHER).count() == 2
    assert Team.objects.get(name=OTHER).service_accounts.filter(name=ORDERS).exists()
    touched = [call for call in runtime.calls if connector_ids(call[1:]) & {ORDERS, OLD}]
    assert touched == []


def connector_ids(args: tuple) -> set[str]:
    """The connector ids a runtime call names: deployments', and ids given as such."""
    found: set[str] = set()
    for arg in args:
        if isinstance(arg, str):
            found.add(arg)
        elif hasattr(arg, "connector_id"):
            found.add(arg.connector_id)
        elif isinstance(arg, (list, tuple, set, frozenset)):
            found |= connector_ids(tuple(arg))
    return found


def mentions(text: str) -> set[str]:
    """Which of bravo's names a request's own path or body mentions (its answer may echo them)."""
    return {leak for leak in LEAKS if leak.strip('"') in text}


def bravo_body(name: str, method: str, spec: dict) -> dict:
    """The roles' matrix's request body for the route, naming bravo's channels."""
    text = json.dumps(body_for(name, method, spec))
    text = text.replace('"orders"', f'"{ORDERS}"').replace('"old"', f'"{OLD}"')
    return json.loads(text.replace("kafka:orders-dead", f"kafka:{ORDERS}-dead"))


@pytest.mark.parametrize(("name", "method", "args"), ROUTES, ids=[f"{n}-{m}" for n, m, _ in ROUTES])
def test_another_team_s_objects_are_not_found_and_never_shown(
    world, spec, django_user_model, runtime, name, method, args
):
    url = reverse(f"api:{name}", kwargs={arg: KWARGS_BRAVO[arg] for arg in args})
    nowhere = reverse(f"api:{name}", kwargs={arg: NOWHERE[arg] for arg in args})
    body = bravo_body(name, method, spec)

    for role in ROLES:  # one world for the four: nothing of bravo's may change anyway
        client = member(django_user_model, f"alice-{role}", {OWN: (role,)})

        response = getattr(client, method)(url, body, format="json")

        if NAMING & set(args):
            # As for a name nothing holds (HTTP ingestion included: it authenticates with the
            # channel's token, not the caller, and must not tell an existing channel either).
            unknown = getattr(client, method)(nowhere, body, format="json")
            assert response.status_code in (401, 403, 404), (role, response.content)
            assert answer(response, KWARGS_BRAVO) == answer(unknown, NOWHERE), role
        else:
            echoed = mentions(f"{url} {body}")
            text = response.content.decode()
            assert [leak for leak in LEAKS if leak not in echoed and leak in text] == [], (
                role,
                text,
            )
        bravo_untouched(runtime)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("name", "method", "args"), ROUTES, ids=[f"{n}-{m}" for n, m, _ in ROUTES])
def test_in_its_own_team_each_role_does_exactly_its_part(
    world, spec, django_user_model, role, name, method, args
):
    rule = RULES[(name, method)]
    if rule == "ingest":
        pytest.skip("HTTP ingestion authenticates with the channel's token, not a role")
    client = member(django_user_model, "alice", {OTHER: (role,)})
    url = reverse(f"api:{name}", kwargs={arg: KWARGS_BRAVO[arg] for arg in args})

    response = getattr(client, method)(url, bravo_body(name, method, spec), format="json")

    if role in ALLOWED[rule]:
        assert response.status_code not in (401, 403), response.content
    else:
        assert response.status_code == 403, response.content


CONNECT_ROUTES = [
    (pattern.name, list(pattern.pattern.converters))
    for pattern in connect_urls.urlpatterns
    if pattern.name != "root"
]
CONNECT_METHODS = ("get", "post", "put", "delete")


@pytest.mark.parametrize(("name", "args"), CONNECT_ROUTES, ids=[n for n, _ in CONNECT_ROUTES])
def test_the_connect_facade_finds_no_other_team_s_connector(
    world, spec, django_user_model, runtime, name, args
):
    kwargs = {arg: {"name": ORDERS, "task": 0}[arg] for arg in args}
    url = reverse(f"connect:{name}", kwargs=kwargs)
    body = {"sluice.spec": spec} if name == "config" else {"name": ORDERS, "config": {}}

    for role, method in itertools.product(ROLES, CONNECT_METHODS):
        client = member(django_user_model, f"alice-{role}-{method}", {OWN: (role,)})
        response = getattr(client, method)(url, body, format="json")
        if (name, method) == ("config", "put") and role in (EDITOR, ADMIN):
            # Connect's create-or-update, a create here: refused as a taken name (site-wide).
            assert response.status_code == 400 and CHANNEL_NAME_TAKEN in response.json()["message"]
        elif "name" in args:
            nowhere = reverse(f"connect:{name}", kwargs={**kwargs, "name": "nothing-here"})
            unknown = getattr(client, method)(nowhere, body, format="json")
            assert response.status_code in (403, 404, 405), (method, response.content)
            assert answer(response, KWARGS_BRAVO) == answer(unknown, NOWHERE)
        elif method == "get":  # the list: bravo's connector is never in it
            assert [leak for leak in LEAKS if leak in response.content.decode()] == []
        else:  # creating under its name is no way in (names are site-wide: "already exists")
            assert response.status_code >= 400, response.content
        bravo_untouched(runtime)


@pytest.mark.parametrize("role", ROLES)
def test_metrics_hold_only_the_caller_s_teams(world, client, django_user_model, role):
    alice = django_user_model.objects.create_user("alice", password="x")
    permissions.grant_role(alice, role, OWN)
    client.force_login(alice)

    text = client.get("/metrics").content.decode()

    assert 'channel="mine"' in text
    assert ORDERS not in text and OLD not in text
    assert f'team="{OTHER}"' not in text


ADMIN_MODELS = ("channel", "connector", "task", "lifecycleevent", "auditevent", "team")


@pytest.mark.parametrize("role", ROLES)
def test_the_admin_lists_and_opens_none_of_another_team_s_rows(
    world, client, django_user_model, role
):
    alice = django_user_model.objects.create_user("alice", password="x", is_staff=True)
    permissions.grant_role(alice, role, OWN)
    client.force_login(alice)
    bravo_rows = {
        "channel": Channel.objects.filter(team__name=OTHER).values_list("pk", flat=True),
        "connector": Connector.objects.filter(channel__team__name=OTHER).values_list(
            "pk", flat=True
        ),
        "auditevent": AuditEvent.objects.filter(team__name=OTHER).values_list("pk", flat=True),
        "team": [world[OTHER].pk],
    }

    for model in ADMIN_MODELS:
        page = client.get(f"/admin/console/{model}/")
        assert page.status_code in (200, 403), (model, page.status_code)
        text = page.content.decode()
        assert SECRET not in text and ORDERS not in text and f">{OTHER}<" not in text, model
    for model, pks in bravo_rows.items():
        for pk in pks:
            opened = client.get(f"/admin/console/{model}/{pk}/change/")
            assert opened.status_code in (302, 403, 404), (model, pk, opened.status_code)
            assert SECRET not in opened.content.decode()
