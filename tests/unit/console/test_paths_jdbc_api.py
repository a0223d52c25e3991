"""The API refuses a files source on /etc and a JDBC sink to the metadata service (issue 12,
findings 3 and 6) with 400 and the field paths, and saves nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.models import Channel, Revision
from pipelines.net import JDBC_ALLOW_ENV
from pipelines.spec.paths import FILES_ROOTS_ENV

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"


@pytest.fixture(autouse=True)
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(FILES_ROOTS_ENV, str(tmp_path))
    monkeypatch.delenv(JDBC_ALLOW_ENV, raising=False)
    return tmp_path


def create(api, spec: dict) -> object:
    return api.post(CHANNELS, {"name": "steal", "spec": spec}, format="json")


def test_a_files_source_on_etc_and_a_jdbc_sink_to_metadata_are_refused(api) -> None:
    spec = {
        "source": {
            "type": "files",
            "config": {"path": "/etc", "format": "csv", "csv_delimiter": ":", "csv_header": False},
        },
        "sink": {"type": "jdbc", "config": {"url": "postgresql://169.254.169.254:80/db"}},
        "errors": {
            "tolerance": "all",
            "dead_letter": {"type": "files", "config": {"path": "/root/.ssh", "format": "jsonl"}},
        },
    }

    response = create(api, spec)

    assert response.status_code == 400, response.content
    errors = response.json()
    assert set(errors) == {
        "spec.source.config.path",
        "spec.sink.config.url",
        "spec.errors.dead_letter.config.path",
    }
    [source] = errors["spec.source.config.path"]
    assert "resolves to /etc, outside the files roots" in source
    [sink] = errors["spec.sink.config.url"]
    assert "169.254.169.254 is a link-local address" in sink and JDBC_ALLOW_ENV in sink
    [dead_letter] = errors["spec.errors.dead_letter.config.path"]
    assert "outside the files roots" in dead_letter
    assert not Channel.objects.exists() and not Revision.objects.exists()


def test_paths_under_the_roots_are_saved(api, roots: Path) -> None:
    spec = {
        "source": {"type": "files", "config": {"path": str(roots / "in")}},
        "sink": {"type": "jdbc", "config": {"url": "sqlite:///events.db"}},
    }

    response = create(api, spec)

    assert response.status_code == 201, response.content
    assert response.json()["spec"]["source"]["config"]["path"] == str(roots / "in")
