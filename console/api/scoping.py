"""The API's side of teams: what a request may see, and a channel looked up by name in it.

Every endpoint under a channel finds it with :func:`channel_or_404`: a channel of a team the
caller is not in is a 404, exactly like one that does not exist; a channel of the caller's
team that their role there does not allow the operation on is a 403 naming the role and the
team (:meth:`console.permissions.RolePermission.has_object_permission`).
"""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.views import APIView

from console import permissions
from console.models import DEFAULT_TEAM, Channel, Team


def team_channels(request: Request, queryset: QuerySet[Channel] | None = None) -> QuerySet[Channel]:
    """``queryset`` (default: every channel) kept to the teams the caller may see."""
    base = queryset if queryset is not None else Channel.objects.all()
    return permissions.visible(base, request.user)


def channel_or_404(
    view: APIView, request: Request, name: str, queryset: QuerySet[Channel] | None = None
) -> Channel:
    """The channel ``name`` among the caller's teams' (404 otherwise), once the caller's role
    in its team allows what ``view`` is asked to do (403 otherwise)."""
    channel = get_object_or_404(team_channels(request, queryset), name=name)
    view.check_object_permissions(request, channel)
    return channel


def creation_team(request: Request, name: str | None, need: permissions.Need) -> Team:
    """The team a new object goes to: ``name`` when the caller may see it (a team they may
    not see reads as one that does not exist: 400 on ``team``) and holds ``need`` there (403
    naming the role and the team); without a name, the one team where the caller holds
    ``need`` (a site admin: the default team), else a 400 asking which."""
    user = request.user
    teams = permissions.visible_teams(user)
    if name is not None:
        team = teams.filter(name=name).first()
        if team is None:
            raise ValidationError({"team": [f"No team is named {name!r}."]})
        if not permissions.may(user, need.permission, team):
            raise PermissionDenied(permissions.denial(need.permission, need.doing, team.name))
        return team
    if user.is_superuser:
        return Team.objects.get_or_create(name=DEFAULT_TEAM)[0]
    allowed = [team for team in teams if permissions.may(user, need.permission, team)]
    if len(allowed) == 1:
        return allowed[0]
    if not allowed:
        raise PermissionDenied(permissions.denial(need.permission, need.doing))
    names = ", ".join(team.name for team in allowed)
    raise ValidationError({"team": [f"Name the team: you may {need.doing} in {names}."]})
