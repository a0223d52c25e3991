"""``me/``: who is calling, their roles and what they may do (the console greys out the
buttons it cannot use)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import views
from rest_framework.request import Request
from rest_framework.response import Response

from console import permissions
from console.api.me.serializers import MeSerializer


class MeView(views.APIView):
    """Who is calling and what they may do: the console greys out the buttons it cannot use."""

    required_permissions = {"get": permissions.AUTHENTICATED}

    @extend_schema(
        operation_id="me_retrieve",
        summary="The current user, their roles and what they may do",
        description=(
            "Any authenticated user, with or without a role. `can` is what the API will "
            "allow: view (read), operate (start, stop, pause, resume, restart, offsets) and "
            "edit (create, change, delete channels)."
        ),
        responses={200: MeSerializer},
        examples=[
            OpenApiExample(
                "An operator",
                value={
                    "username": "alice",
                    "roles": ["operator"],
                    "teams": [
                        {
                            "name": "payments",
                            "roles": ["operator"],
                            "can": {
                                "view": True,
                                "operate": True,
                                "operate_workers": True,
                                "edit": False,
                            },
                        }
                    ],
                    "is_superuser": False,
                    "can": {"view": True, "operate": True, "edit": False},
                },
            )
        ],
    )
    def get(self, request: Request) -> Response:
        user = request.user
        body = {
            "username": user.get_username(),
            "roles": permissions.roles_of(user),
            "teams": [
                {
                    "name": team.name,
                    "roles": permissions.roles_of(user, team),
                    "can": permissions.capabilities(user, team),
                }
                for team in permissions.visible_teams(user)
            ],
            "is_superuser": user.is_superuser,
            "can": permissions.capabilities(user),
        }
        return Response(MeSerializer(body).data)
