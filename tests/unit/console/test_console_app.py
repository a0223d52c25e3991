"""The browser console at "/": served to logged-in users only, with the same session
login and CSRF protection the API uses."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

INDEX = '<!doctype html><html><head></head><body><div id="root"></div></body></html>'


@pytest.fixture
def dist(settings, tmp_path):
    """A built frontend with a known index.html."""
    (tmp_path / "index.html").write_text(INDEX, encoding="utf-8")
    settings.FRONTEND_DIST = tmp_path
    return tmp_path


def test_an_anonymous_visitor_is_sent_to_the_login_page(dist):
    response = Client().get("/")

    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/"


def test_the_login_page_renders_a_labelled_form():
    response = Client().get("/login/?next=/")

    assert response.status_code == 200
    page = response.content.decode()
    assert 'for="id_username"' in page
    assert 'for="id_password"' in page
    assert 'name="csrfmiddlewaretoken"' in page


def test_logging_in_leads_to_the_console_with_a_csrf_cookie(dist, user):
    client = Client(enforce_csrf_checks=True)
    token = client.get("/login/").cookies["csrftoken"].value

    response = client.post(
        "/login/",
        {"username": "alice", "password": "s3cret-pass", "next": "/", "csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302
    assert response["Location"] == "/"

    page = client.get("/")
    assert page.status_code == 200
    assert page.content.decode().startswith("<!doctype html>")
    assert '<body data-user="alice">' in page.content.decode()
    assert "csrftoken" in page.cookies


def test_a_wrong_password_is_refused(user):
    response = Client().post("/login/", {"username": "alice", "password": "nope"})

    assert response.status_code == 200
    assert "did not match" in response.content.decode()


def test_the_user_name_is_escaped(dist, django_user_model):
    django_user_model.objects.create_user('x"<b>', password="s3cret-pass")
    client = Client()
    client.login(username='x"<b>', password="s3cret-pass")

    assert 'data-user="x&quot;&lt;b&gt;"' in client.get("/").content.decode()


def test_an_unbuilt_console_says_how_to_build_it(settings, tmp_path, user):
    settings.FRONTEND_DIST = tmp_path / "missing"
    client = Client()
    client.force_login(user)

    response = client.get("/")

    assert response.status_code == 503
    assert "npm run build" in response.content.decode()


def test_api_writes_from_the_session_need_the_csrf_header(dist, user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    token = client.get("/").cookies["csrftoken"].value
    body = {"pattern": {"data": {"x": [1]}}, "event": {"data": {"x": 1}}}

    refused = client.post("/api/v1/event-patterns/test", body, content_type="application/json")
    accepted = client.post(
        "/api/v1/event-patterns/test", body, content_type="application/json", HTTP_X_CSRFTOKEN=token
    )

    assert refused.status_code == 403
    assert accepted.status_code == 200
    assert accepted.json() == {"result": True}


def test_logout_ends_the_session(dist, user):
    client = Client()
    client.force_login(user)

    response = client.post("/logout/")

    assert response.status_code == 302
    assert response["Location"] == "/login/"
    assert client.get("/").status_code == 302


def test_the_built_assets_are_served_as_static_files(settings):
    if not (settings.FRONTEND_DIST / "index.html").exists():
        pytest.skip("frontend not built")
    from django.contrib.staticfiles import finders

    assert finders.find("ui/index.html") is not None


def test_every_page_has_the_site_icon():
    """The browser's own /favicon.ico request (the admin, the API docs) and the pages' link
    get the SVG icon, without signing in; the console's index.html and the login page link it."""
    response = Client().get("/favicon.ico")

    assert response.status_code == 200
    assert response["Content-Type"] == "image/svg+xml"
    assert response.content.startswith(b"<svg") and b"</svg>" in response.content
    icon = '<link rel="icon" type="image/svg+xml" href="/favicon.ico">'
    assert icon in Client().get("/login/").content.decode()
    from django.conf import settings

    index = (settings.BASE_DIR / "frontend" / "index.html").read_text(encoding="utf-8")
    assert icon.replace(">", " />") in index
