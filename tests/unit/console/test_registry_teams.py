"""Teams in the schema registry: each team's Confluent API at ``/schema-registry/teams/<team>/``
and the console's ``/api/v1/schemas/``. The cross-team matrix: every registry route x {viewer,
editor, team admin of team a} x {a's subject, b's subject}: b's objects are always a 404 (its
registry, its subjects, its schema ids), lists and counts never include them, nothing of b's
changes, and a's follow the roles."""

from __future__ import annotations

import base64
import json

import pytest
from django.urls import URLPattern
from rest_framework.test import APIClient

from console.api.schema_registry.urls import TEAM, routes
from console.models import RegistrySchema, Subject, SubjectVersion, Team
from console.permissions import ADMIN, EDITOR, VIEWER
from console.services import schemas as services
from console.services import service_accounts
from pipelines.registry_client import RegistryClient, bind_registry_team, runtime_registry_token
from pipelines.spec.configs.schema_registry import SchemaRegistryConfig
from tests.unit.console.members import member

pytestmark = pytest.mark.django_db

MEDIA = "application/vnd.schemaregistry.v1+json"
ONLY_A = {"type": "record", "name": "OnlyA", "fields": [{"name": "a", "type": "string"}]}
ONLY_B = {"type": "record", "name": "OnlyB", "fields": [{"name": "b", "type": "string"}]}
SHARED = {"type": "record", "name": "Shared", "fields": [{"name": "s", "type": "string"}]}
ROLE_NAMES = (VIEWER, EDITOR, ADMIN)


def candidate(schema: dict) -> services.Candidate:
    return services.Candidate("AVRO", json.dumps(schema), [])


@pytest.fixture
def registry() -> dict[str, int]:
    """Team ``a`` with subjects ``a-value`` (its own level set) and ``shared-value``; team
    ``b`` with ``b-value`` and its own ``shared-value`` (the same text: the same global id)."""
    a = Team.objects.create(name="a")
    b = Team.objects.create(name="b")
    ids = {
        "a": services.register(a, "a-value", candidate(ONLY_A)).schema_id,
        "shared": services.register(a, "shared-value", candidate(SHARED)).schema_id,
        "b": services.register(b, "b-value", candidate(ONLY_B)).schema_id,
    }
    assert services.register(b, "shared-value", candidate(SHARED)).schema_id == ids["shared"]
    services.set_subject_compatibility(a, "a-value", {"compatibility": "BACKWARD"})
    services.set_subject_compatibility(b, "b-value", {"compatibility": "FULL"})
    return ids


def b_state() -> list[tuple]:
    """Everything of team b's in the registry (to see that nothing of it changed)."""
    return list(
        SubjectVersion.objects.filter(subject__team__name="b")
        .order_by("pk")
        .values_list("subject__name", "subject__compatibility", "version", "schema_id", "deleted")
    )


def client_of(django_user_model, role: str) -> APIClient:
    return member(django_user_model, f"{role}-of-a", {"a": (role,)})


# -- the Confluent API -----------------------------------------------------------------------


def registry_routes() -> list[tuple[str, str, list[str]]]:
    """Every (route name, method, path arguments) of a team's registry."""
    found = []
    for pattern in routes(TEAM, "team-"):
        assert isinstance(pattern, URLPattern)
        view = pattern.callback.view_class  # type: ignore[attr-defined]
        for method in ("get", "post", "put", "delete"):
            if hasattr(view, method):
                found.append((str(pattern.name), method, list(pattern.pattern.converters)))
    return found


REGISTRY_ROUTES = registry_routes()
SUBJECT_CONFIG = {"team-subject-config"}
SITE_CONFIG = {("team-config", "put"), ("team-config", "delete"), ("team-mode", "put")}
SITE_CONFIG |= {("team-subject-mode", "put")}
WRITES = {
    ("team-versions", "post"),
    ("team-subject", "delete"),
    ("team-version", "delete"),
}


def registry_url(name: str, args: list[str], team: str, subject: str, schema_id: int) -> str:
    from django.urls import reverse

    values = {"team": team, "subject": subject, "version": "1", "schema_id": schema_id}
    return reverse(f"schema-registry:{name}", kwargs={arg: values[arg] for arg in args})


def registry_body(name: str, method: str, schema: dict) -> str:
    if "config" in name:
        return json.dumps({"compatibility": "NONE"})
    if "mode" in name:
        return json.dumps({"mode": "READWRITE"})
    return json.dumps({"schema": json.dumps(schema)})


def call(client: APIClient, method: str, url: str, body: str):
    if method in ("get", "delete"):
        return getattr(client, method)(url)
    return getattr(client, method)(url, body, content_type=MEDIA)


def test_the_matrix_covers_every_route_of_a_team_s_registry():
    names = {name for name, _, _ in REGISTRY_ROUTES}
    assert len(REGISTRY_ROUTES) == 27
    assert {"team-schema", "team-schema-subjects", "team-subject-config"} <= names
    # the legacy root serves the same routes
    assert len(routes()) == len(routes(TEAM, "team-"))


@pytest.mark.parametrize("role", ROLE_NAMES)
@pytest.mark.parametrize(
    ("name", "method", "args"), REGISTRY_ROUTES, ids=[f"{n}-{m}" for n, m, _ in REGISTRY_ROUTES]
)
def test_team_b_s_registry_and_objects_are_a_404_to_team_a(
    registry, django_user_model, role, name, method, args
):
    client = client_of(django_user_model, role)
    before = b_state()
    body = registry_body(name, method, ONLY_B)

    # b's own registry: as a team that does not exist, whatever the route.
    in_b = call(client, method, registry_url(name, args, "b", "b-value", registry["b"]), body)
    nowhere = call(client, method, registry_url(name, args, "zz", "b-value", registry["b"]), body)
    assert in_b.status_code == 404, in_b.content
    assert (in_b.status_code, in_b.json()) == (nowhere.status_code, nowhere.json())

    # b's subject and id named in a's registry: not there, exactly as what is nowhere.
    response = call(client, method, registry_url(name, args, "a", "b-value", registry["b"]), body)
    if method == "get":
        absent = client.get(registry_url(name, args, "a", "no-value", 2**31 - 1))
        assert response.status_code == absent.status_code, response.content
        found, nowhere_found = response.json(), absent.json()
        if isinstance(found, dict) and "error_code" in found:
            assert found["error_code"] == nowhere_found["error_code"]
        else:  # an answer that names no subject nor id: the same for both
            assert found == nowhere_found
        if {"subject", "schema_id"} & set(args) and name != "team-subject-mode":
            assert response.status_code == 404, response.content  # (mode: READWRITE for all)
    assert "OnlyB" not in response.content.decode()
    if method == "get" and response.status_code == 200:
        assert "b-value" not in response.content.decode()
    assert b_state() == before


def expected_status(name: str, method: str, role: str) -> int:
    if (name, method) in SITE_CONFIG:
        return 403  # the global level and mode are a site admin's
    if name in SUBJECT_CONFIG and method in ("put", "delete"):
        return 200 if role == ADMIN else 403
    if (name, method) in WRITES:
        return 200 if role in (EDITOR, ADMIN) else 403
    return 200


@pytest.mark.parametrize("role", ROLE_NAMES)
@pytest.mark.parametrize(
    ("name", "method", "args"), REGISTRY_ROUTES, ids=[f"{n}-{m}" for n, m, _ in REGISTRY_ROUTES]
)
def test_team_a_s_registry_follows_the_roles(registry, django_user_model, role, name, method, args):
    client = client_of(django_user_model, role)
    before = b_state()
    url = registry_url(name, args, "a", "a-value", registry["a"])
    # what a registers: a new version of its subject (the delete routes: soft deletes)
    schema = {**ONLY_A, "fields": [*ONLY_A["fields"], {"name": "x", "type": "int", "default": 0}]}
    if name == "team-subject":  # POST: is this schema registered?
        schema = ONLY_A
    response = call(client, method, url, registry_body(name, method, schema))

    assert response.status_code == expected_status(name, method, role), response.content
    if response.status_code == 403:
        assert response.json()["error_code"] == 40301
        assert "You need the" in response.json()["message"]
        if name in SUBJECT_CONFIG:  # a role held in the team, not the one needed there
            assert "admin role (console.manage_team)" in response.json()["message"]
            assert "in the team a" in response.json()["message"]
    assert "OnlyB" not in response.content.decode()
    assert b_state() == before


def test_lists_and_counts_of_a_team_s_registry_hold_its_subjects_only(registry, django_user_model):
    client = client_of(django_user_model, VIEWER)
    shared = registry["shared"]

    assert client.get("/schema-registry/teams/a/subjects").json() == ["a-value", "shared-value"]
    # the legacy root is the caller's one team
    assert client.get("/schema-registry/subjects").json() == ["a-value", "shared-value"]
    # one id, registered by both teams: each sees its own subject using it, never the other's
    assert client.get(f"/schema-registry/teams/a/schemas/ids/{shared}/subjects").json() == [
        "shared-value"
    ]
    assert client.get(f"/schema-registry/teams/a/schemas/ids/{shared}/versions").json() == [
        {"subject": "shared-value", "version": 1}
    ]
    assert client.get("/schema-registry/teams/a/subjects/shared-value/versions").json() == [1]
    assert client.get("/schema-registry/teams/a/config/a-value").json() == {
        "compatibilityLevel": "BACKWARD"  # b's b-value is FULL
    }
    refused = client.get("/schema-registry/teams/a/config/b-value")
    assert refused.status_code == 404 and refused.json()["error_code"] == 40408


def test_a_team_name_no_team_may_have_is_none_s(registry, django_user_model):
    """A NUL or any other character outside team names (the API fuzz's find: PostgreSQL
    refuses NUL in text) names no team, in a registry URL or a ``?team=``: 404, never 500."""
    client = client_of(django_user_model, VIEWER)

    assert client.get("/schema-registry/teams/a%00/subjects").status_code == 404
    assert client.get("/schema-registry/teams/A b/subjects").status_code == 404
    for route in ("/", "/versions", "/diff", "/shape"):
        answer = client.get(f"/api/v1/schemas/a-value{route}", {"team": "a\x00"})
        assert answer.status_code == 404, (route, answer.content)
    assert client.get("/api/v1/schemas/a\x00-value/", {"team": "a"}).status_code == 404
    assert client.get("/api/v1/schemas/", {"team": "\x00"}).json()["count"] == 0


def test_a_subject_name_is_the_team_s_own(registry, django_user_model):
    editor = client_of(django_user_model, EDITOR)
    body = json.dumps({"schema": json.dumps(ONLY_A)})

    created = editor.post(
        "/schema-registry/teams/a/subjects/b-value/versions", body, content_type=MEDIA
    )

    assert created.status_code == 200
    a_subject = Subject.objects.get(team__name="a", name="b-value")
    b_subject = Subject.objects.get(team__name="b", name="b-value")
    assert a_subject.pk != b_subject.pk
    assert [v.schema_id for v in b_subject.versions.all()] == [registry["b"]]
    # permanently deleting a's subject leaves b's alone
    editor.delete("/schema-registry/teams/a/subjects/b-value")
    editor.delete("/schema-registry/teams/a/subjects/b-value?permanent=true")
    assert not Subject.objects.filter(team__name="a", name="b-value").exists()
    assert b_subject.versions.count() == 1


def test_an_id_stays_found_in_its_team_after_its_versions_are_gone(registry, django_user_model):
    editor = client_of(django_user_model, EDITOR)

    editor.delete("/schema-registry/teams/a/subjects/a-value")
    editor.delete("/schema-registry/teams/a/subjects/a-value?permanent=true")

    kept = editor.get(f"/schema-registry/teams/a/schemas/ids/{registry['a']}/schema")
    assert kept.status_code == 200 and kept.json() == ONLY_A  # old messages carry the id
    assert RegistrySchema.objects.get(pk=registry["a"]).teams.get().name == "a"


def test_the_legacy_root_is_the_one_team_else_the_default_team(registry, django_user_model):
    both = member(django_user_model, "both", {"a": (VIEWER,), "b": (VIEWER,)})
    # in two teams: the legacy root is the default team's, which they are not in
    assert both.get("/schema-registry/subjects").status_code == 404
    assert both.get("/schema-registry/teams/b/subjects").json() == ["b-value", "shared-value"]
    Team.objects.get_or_create(name="default")
    both_in_default = member(
        django_user_model, "three", {"a": (VIEWER,), "b": (VIEWER,), "default": (VIEWER,)}
    )
    assert both_in_default.get("/schema-registry/subjects").json() == []
    root = django_user_model.objects.create_superuser("root", password="pw")
    site = APIClient()
    site.force_authenticate(root)
    services.register(Team.objects.get(name="default"), "old-value", candidate(SHARED))
    assert site.get("/schema-registry/subjects").json() == ["old-value"]
    assert site.get("/schema-registry/teams/b/subjects").json() == ["b-value", "shared-value"]


def test_registering_with_a_reference_resolves_it_in_the_team(registry, django_user_model):
    editor = client_of(django_user_model, EDITOR)
    holder = {"type": "record", "name": "Holder", "fields": [{"name": "b", "type": "OnlyB"}]}
    refs = [{"name": "OnlyB", "subject": "b-value", "version": 1}]
    body = json.dumps({"schema": json.dumps(holder), "references": refs})

    refused = editor.post(
        "/schema-registry/teams/a/subjects/holder-value/versions", body, content_type=MEDIA
    )

    assert refused.status_code == 422 and refused.json()["error_code"] == 42201
    assert "OnlyB" not in refused.json()["message"].replace("'OnlyB'", "")


# -- authentication: service accounts and the runtime ----------------------------------------


def test_a_service_account_authenticates_with_basic_auth_or_bearer(registry):
    issued = service_accounts.issue(
        Team.objects.get(name="a"), name="ci", role=EDITOR, expires_in_days=1
    )
    token = issued.token
    client = APIClient()

    def basic(user: str, password: str) -> str:
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    for header in (basic("svc.a.ci", token), basic("token", token), f"Bearer {token}"):
        client.credentials(HTTP_AUTHORIZATION=header)
        assert client.get("/schema-registry/teams/a/subjects").json() == [
            "a-value",
            "shared-value",
        ]
        assert client.get("/schema-registry/subjects").json() == ["a-value", "shared-value"]
        assert client.get("/schema-registry/teams/b/subjects").status_code == 404
    for header in (basic("svc.b.ci", token), basic("svc.a.ci", token + "x"), "Bearer sls_nope"):
        client.credentials(HTTP_AUTHORIZATION=header)
        assert client.get("/schema-registry/teams/a/subjects").status_code == 401
    service_accounts.revoke(issued.account)
    client.credentials(HTTP_AUTHORIZATION=basic("svc.a.ci", token))
    assert client.get("/schema-registry/teams/a/subjects").status_code == 401


def test_the_runtime_reads_a_team_s_registry_and_writes_nothing(registry, client):
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {runtime_registry_token()}"}
    for team, schema in (("a", ONLY_A), ("b", ONLY_B)):
        read = client.get(
            f"/schema-registry/teams/{team}/subjects/{team}-value/versions/1", **bearer
        )
        assert read.status_code == 200 and json.loads(read.json()["schema"]) == schema
    refused = client.post(
        "/schema-registry/teams/a/subjects/a-value/versions",
        json.dumps({"schema": json.dumps(SHARED)}),
        content_type=MEDIA,
        **bearer,
    )
    assert refused.status_code in (401, 403)


def test_a_driver_s_registry_is_its_channel_s_team_s(monkeypatch):
    monkeypatch.setenv("SLUICE_SCHEMA_REGISTRY_URL", "http://console:8000/schema-registry/")
    spec = {
        "source": {"type": "kafka", "config": {"schema_registry": {"subject": "s"}}},
        "rules": [
            {"sink": {"config": {"schema_registry": {"url": "https://r.example", "team": "x"}}}}
        ],
    }

    bind_registry_team(spec, "a")

    own = spec["source"]["config"]["schema_registry"]
    external = spec["rules"][0]["sink"]["config"]["schema_registry"]
    assert own == {"subject": "s", "team": "a"}
    assert external == {"url": "https://r.example"}  # an external registry has no team
    config = SchemaRegistryConfig.model_validate(own)
    assert RegistryClient(config).base == "http://console:8000/schema-registry/teams/a"
    assert config.model_dump()["team"] == "a"  # what the runtime set survives validation
    assert RegistryClient(SchemaRegistryConfig()).base == "http://console:8000/schema-registry"
    assert SchemaRegistryConfig(subject="s").model_dump(mode="json").get("team", "-") == "-"
    assert bind_registry_team(spec, "")["source"]["config"]["schema_registry"] == {"subject": "s"}


# -- the console's API ------------------------------------------------------------------------

CONSOLE_READS = ["", "versions", "diff", "shape"]


@pytest.mark.parametrize("role", ROLE_NAMES)
@pytest.mark.parametrize("read", CONSOLE_READS)
def test_the_console_api_reads_a_s_subjects_and_never_b_s(registry, django_user_model, role, read):
    client = client_of(django_user_model, role)
    suffix = f"{read}" if read else ""

    mine = client.get(f"/api/v1/schemas/a-value/{suffix}")
    theirs = client.get(f"/api/v1/schemas/b-value/{suffix}")
    named = client.get(f"/api/v1/schemas/shared-value/{suffix}", {"team": "b"})
    nowhere = client.get(f"/api/v1/schemas/no-such-value/{suffix}")

    assert mine.status_code == 200, mine.content
    assert theirs.status_code == named.status_code == nowhere.status_code == 404
    assert theirs.json() == {"detail": "Subject 'b-value' not found."}
    shared = client.get(f"/api/v1/schemas/shared-value/{suffix}")
    assert shared.status_code == 200 and "OnlyB" not in shared.content.decode()


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_the_console_api_lists_and_counts_a_s_subjects_only(registry, django_user_model, role):
    client = client_of(django_user_model, role)

    listed = client.get("/api/v1/schemas/").json()
    filtered = client.get("/api/v1/schemas/", {"team": "b"}).json()

    assert listed["count"] == 2
    assert [(row["team"], row["name"]) for row in listed["results"]] == [
        ("a", "a-value"),
        ("a", "shared-value"),
    ]
    assert filtered["count"] == 0 and filtered["results"] == []


@pytest.mark.parametrize("role", ROLE_NAMES)
@pytest.mark.parametrize("action", ["", "check"])
def test_the_console_api_registers_in_a_by_role_and_never_in_b(
    registry, django_user_model, role, action
):
    client = client_of(django_user_model, role)
    before = b_state()
    url = f"/api/v1/schemas/{action}"
    body = {"subject": "b-value", "schema": json.dumps(SHARED)}

    into_b = client.post(url, {**body, "team": "b"}, format="json")
    into_nowhere = client.post(url, {**body, "team": "zz"}, format="json")
    into_a = client.post(url, body, format="json")  # the caller's one team

    if action == "check" or role in (EDITOR, ADMIN):
        assert into_b.status_code == 400 and into_b.json()["team"] == ["No team is named 'b'."]
    else:  # may register nowhere: refused before any team is looked at
        assert into_b.status_code == 403
    assert into_nowhere.status_code == into_b.status_code
    if action == "check" or role in (EDITOR, ADMIN):
        assert into_a.status_code in (200, 201), into_a.content
        assert into_a.json()["team"] == "a"
    else:
        assert into_a.status_code == 403
        assert "You need the editor role" in into_a.json()["detail"]
    assert b_state() == before


def test_a_site_admin_sees_every_team_s_subjects_and_names_the_team(registry, admin_client):
    listed = admin_client.get("/api/v1/schemas/").json()
    assert [(row["team"], row["name"]) for row in listed["results"]] == [
        ("a", "a-value"),
        ("a", "shared-value"),
        ("b", "b-value"),
        ("b", "shared-value"),
    ]
    ambiguous = admin_client.get("/api/v1/schemas/shared-value/")
    assert ambiguous.status_code == 400
    assert ambiguous.json()["team"] == ["Subjects named 'shared-value' are in a, b: name one."]
    named = admin_client.get("/api/v1/schemas/shared-value/", {"team": "b"}).json()
    assert named["team"] == "b"
    body = {"team": "b", "subject": "new-value", "schema": '"string"'}
    created = admin_client.post(
        "/api/v1/schemas/", json.dumps(body), content_type="application/json"
    )
    assert created.status_code == 201 and created.json()["team"] == "b"


def test_a_spec_may_not_choose_its_registry_s_team(django_user_model):
    from console.selectors.specs import InvalidSpec, normalize_spec

    spec = {
        "source": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": "localhost:9092",
                "topics": ["in"],
                "format": "avro",
                "schema_registry": {"team": "b"},
            },
        },
        "sink": {"type": "preview", "config": {}},
    }
    with pytest.raises(InvalidSpec) as refused:
        normalize_spec(spec)
    assert list(refused.value.errors) == ["source.config.schema_registry.team"]
    del spec["source"]["config"]["schema_registry"]["team"]
    normalized = normalize_spec(spec)
    assert "team" not in normalized["source"]["config"]["schema_registry"]


@pytest.mark.django_db(transaction=True)
def test_subjects_from_before_teams_move_into_the_default_team():
    """Migration 0033: subjects go to the ``default`` team and each schema id to its
    subjects' teams (the default team's when no version uses it any more)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("console", "0032_quotas_channel_realtime_cores")]
    after = [("console", "0033_registry_teams")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    Schema = old.get_model("console", "RegistrySchema")
    used = Schema.objects.create(schema_type="AVRO", schema='"string"', fingerprint="f1")
    orphan = Schema.objects.create(schema_type="AVRO", schema='"int"', fingerprint="f2")
    subject = old.get_model("console", "Subject").objects.create(name="orders-value")
    old.get_model("console", "SubjectVersion").objects.create(
        subject=subject, version=1, schema=used
    )

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(after)
    new = executor.loader.project_state(after).apps

    moved = new.get_model("console", "Subject").objects.get(name="orders-value")
    assert moved.team.name == "default"
    Schema = new.get_model("console", "RegistrySchema")
    assert list(Schema.objects.get(pk=used.pk).teams.values_list("name", flat=True)) == ["default"]
    assert list(Schema.objects.get(pk=orphan.pk).teams.values_list("name", flat=True)) == [
        "default"
    ]
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_a_team_s_registry_writes_are_audited_in_the_team(registry, django_user_model):
    from console.models import AuditEvent

    editor = client_of(django_user_model, EDITOR)
    body = json.dumps({"schema": json.dumps(SHARED)})

    editor.post("/schema-registry/teams/a/subjects/new-value/versions", body, content_type=MEDIA)
    editor.post("/schema-registry/subjects/legacy-value/versions", body, content_type=MEDIA)
    editor.delete("/schema-registry/teams/a/subjects/new-value/versions/1")
    editor.post(
        "/api/v1/schemas/",
        {"subject": "console-value", "schema": json.dumps(SHARED)},
        format="json",
    )

    rows = set(
        AuditEvent.objects.filter(actor=f"{EDITOR}-of-a").values_list(
            "action", "object_id", "team__name", "via"
        )
    )
    assert rows == {
        ("schema.register", "new-value", "a", "schema-registry"),
        ("schema.register", "legacy-value", "a", "schema-registry"),
        ("schema.version.delete", "new-value/versions/1", "a", "schema-registry"),
        ("schema.register", "console-value", "a", "api"),
    }
