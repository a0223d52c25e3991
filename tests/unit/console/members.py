"""Team members for the teams' tests: a user holding roles in named teams, as an API client."""

from __future__ import annotations

from rest_framework.test import APIClient

from console import permissions


def member(django_user_model, name: str, roles: dict[str, tuple[str, ...]]) -> APIClient:
    """A client signed in as a new user ``name`` holding ``roles`` (by team name)."""
    user = django_user_model.objects.create_user(name, password="s3cret-pass")
    for team, held in roles.items():
        for role in held:
            permissions.grant_role(user, role, team)
    client = APIClient()
    client.force_authenticate(user)
    return client
