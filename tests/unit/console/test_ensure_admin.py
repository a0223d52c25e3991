from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def run() -> str:
    out = io.StringIO()
    call_command("ensure_admin", stdout=out)
    return out.getvalue()


def test_creates_admin_with_the_password_from_the_environment(monkeypatch):
    monkeypatch.setenv("SLUICE_ADMIN_PASSWORD", "from-the-env-123")

    output = run()

    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff
    assert admin.check_password("from-the-env-123")
    assert "from-the-env-123" not in output


def test_generates_and_prints_a_password_once(monkeypatch):
    monkeypatch.delenv("SLUICE_ADMIN_PASSWORD", raising=False)

    first = run()
    second = run()

    password = first.split("password: ")[1].split()[0]
    assert get_user_model().objects.get(username="admin").check_password(password)
    assert password not in second
    assert "already exists" in second
    assert get_user_model().objects.count() == 1


def test_leaves_an_existing_admin_alone(monkeypatch, django_user_model):
    django_user_model.objects.create_superuser("admin", password="original-pass")
    monkeypatch.setenv("SLUICE_ADMIN_PASSWORD", "something-else")

    run()

    assert django_user_model.objects.get(username="admin").check_password("original-pass")
