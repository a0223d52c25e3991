"""An editor must not own the host (issue 12), on the real stack: gunicorn, Celery, a runtime
worker and Spark drivers, Kafka and Redis.

An editor, signed in with their own token, tries what a hostile team member would: run Java
through the SQL transform, read a file outside the files roots, and send a stored secret to a
host they control. Each attempt is refused with a field error at save time; where the editor
could arrange for a check made at save time to be stale (a symlink inside a root repointed
after the save), the driver checks again and the channel fails instead of reading.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
import requests

from pipelines.spec.secrets import SECRET_MARKER
from tests.integration.conftest import Stack, manage
from tests.integration.test_walking_skeleton import wait_for_state
from tests.support.http_server import RecordingServer
from tests.support.processes import wait_until

pytestmark = pytest.mark.integration

PREVIEW = {"type": "preview", "config": {"max_events": 20}}
GENERATOR = {"type": "generator", "config": {"rate": 5}}


@pytest.fixture(scope="module")
def editor(stack: Stack) -> requests.Session:
    """A session of mallory, who holds the editor role only."""
    name = f"mallory-{uuid.uuid4().hex[:6]}"
    manage(stack.env, "sluice_role", name, "editor", "--create")
    token = manage(stack.env, "drf_create_token", name).split()[2]
    http = requests.Session()
    http.headers["Authorization"] = f"Token {token}"
    return http


def _create(http: requests.Session, stack: Stack, spec: dict, name: str | None = None):
    name = name or f"attack-{uuid.uuid4().hex[:8]}"
    body = {"name": name, "description": "", "spec": spec}
    return name, http.post(f"{stack.api}/channels/", json=body, timeout=10)


def _refused(response: requests.Response, path: str, *words: str) -> str:
    assert response.status_code == 400, (response.status_code, response.text[:500])
    errors = response.json()
    assert path in errors, errors
    message = " ".join(errors[path])
    for word in words:
        assert word.lower() in message.lower(), (word, message)
    return message


@pytest.mark.parametrize(
    "expression",
    [
        "reflect('java.lang.System','getProperty','user.name') AS u",
        "java_method('java.lang.System','getenv','HOME') AS h",
        "transform(array(1), x -> java_method('java.lang.System','getenv','HOME')) AS e",
        "concat(r'\\', (SELECT first(value) FROM text.`/etc/hostname`), '\\'') AS x",
    ],
)
def test_an_editor_cannot_reach_the_jvm_or_a_file_through_sql(
    stack: Stack, editor: requests.Session, expression: str
) -> None:
    spec = {
        "source": GENERATOR,
        "transforms": [{"type": "sql", "config": {"expressions": [expression]}}],
        "sink": PREVIEW,
    }
    _, response = _create(editor, stack, spec)
    _refused(response, "spec.transforms[0].config.expressions[0]")
    validated = editor.post(
        f"{stack.api}/plugins/transform/sql/validate",
        json={"config": {"expressions": [expression]}},
        timeout=10,
    )
    assert validated.status_code == 400, validated.text
    assert list(validated.json()["errors"]) == ["config.expressions[0]"], validated.text


def test_an_editor_cannot_read_a_file_outside_the_roots(
    stack: Stack, editor: requests.Session
) -> None:
    source = {
        "type": "files",
        "config": {"path": "/etc", "format": "csv", "csv_delimiter": ":", "csv_header": False},
    }
    _, response = _create(editor, stack, {"source": source, "transforms": [], "sink": PREVIEW})
    _refused(response, "spec.source.config.path")

    dead_letters = {"type": "files", "config": {"path": "/tmp/sluice-dlq-attack"}}
    spec = {
        "source": GENERATOR,
        "transforms": [],
        "sink": PREVIEW,
        "errors": {"tolerance": "all", "dead_letter": dead_letters},
    }
    _, response = _create(editor, stack, spec)
    assert response.status_code == 400, response.text
    assert any("dead_letter" in path for path in response.json()), response.json()


def test_a_symlink_repointed_after_the_save_is_refused_by_the_driver(
    stack: Stack, editor: requests.Session
) -> None:
    root = Path(stack.env["SLUICE_FILES_ROOTS"].split(os.pathsep)[0].split(",")[0])
    inbox = root / f"inbox-{uuid.uuid4().hex[:6]}"
    inbox.mkdir(parents=True)
    (inbox / "orders.jsonl").write_text('{"order": 1}\n')
    source = {"type": "files", "config": {"path": str(inbox), "format": "jsonl"}}
    name, response = _create(editor, stack, {"source": source, "transforms": [], "sink": PREVIEW})
    assert response.status_code == 201, response.text

    # What a host-side accomplice (or a sink of another channel) could do after the save.
    inbox.rename(inbox.with_name(inbox.name + "-moved"))
    inbox.symlink_to("/etc", target_is_directory=True)

    admin = stack.session()  # an operator starts it, as in the report
    assert admin.post(f"{stack.api}/channels/{name}/start", timeout=10).status_code == 202
    failed = wait_for_state(stack, name, "FAILED", 180)
    assert "/etc" in failed["trace"] and "root" in failed["trace"].lower(), failed["trace"][:800]
    preview = admin.get(f"{stack.api}/channels/{name}/preview", timeout=10).json()
    assert "root:x:0:0" not in str(preview)


def test_a_kept_secret_never_follows_a_new_address(stack: Stack, editor: requests.Session) -> None:
    with RecordingServer() as owner_endpoint, RecordingServer() as attacker_endpoint:
        sink = {
            "type": "http",
            "config": {
                "url": owner_endpoint.url,
                "auth": {"type": "bearer", "token": "owner-only-token"},
            },
        }
        name, response = _create(
            stack.session(), stack, {"source": GENERATOR, "transforms": [], "sink": sink}
        )
        assert response.status_code == 201, response.text

        read = editor.get(f"{stack.api}/channels/{name}/", timeout=10).json()
        assert read["spec"]["sink"]["config"]["auth"]["token"] == SECRET_MARKER
        stolen = read["spec"]
        stolen["sink"]["config"]["url"] = attacker_endpoint.url.replace("127.0.0.1", "localhost")
        response = editor.put(
            f"{stack.api}/channels/{name}/",
            json={"name": name, "description": "", "spec": stolen},
            timeout=10,
        )
        _refused(response, "spec.sink.config.auth.token", "re-enter")

        admin = stack.session()
        assert admin.post(f"{stack.api}/channels/{name}/start", timeout=10).status_code == 202
        wait_for_state(stack, name, "RUNNING", 180)
        wait_until(lambda: len(owner_endpoint.requests) >= 5, 90, what="events at the owner's URL")
        assert admin.post(f"{stack.api}/channels/{name}/stop", timeout=10).status_code == 202
        assert attacker_endpoint.requests == [], "the attacker's endpoint was called"
        assert all(
            request.header("Authorization") == "Bearer owner-only-token"
            for request in owner_endpoint.requests
        )
