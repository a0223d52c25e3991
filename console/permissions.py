"""Roles and the permissions they grant, in one place, for the API, the admin and the UI.

Roles are held **per team** (:class:`console.models.Membership`); what each grants is this
module's code, not database rows:

* **viewer** sees the team's objects: ``view_*`` on the console's models;
* **operator** is a viewer who may also start, stop, pause, resume and restart the team's
  channels and change their offsets (``console.operate_channel``), and drain, return to
  service and forget runtime workers (``console.operate_worker``);
* **editor** is a viewer who may also create, change and delete the team's channels;
* **admin** (team admin) may do all of that and manage the team's members
  (``console.manage_team``).

Operator and editor do not include each other; a user may hold both in a team. A superuser
is a site admin: every team, every permission. :class:`TeamRoles`, an authentication
backend, answers ``user.has_perm(perm)`` (in any team: may the user do this somewhere?) and
``user.has_perm(perm, obj)`` (in the team of ``obj``). A permission granted by hand to a user
or to a site's own Django group still counts, site-wide, for what the user can see
(:class:`RolePermission`); what a user can see is only ever their teams' objects
(:func:`visible_team_ids`): another team's object is a 404.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rest_framework.permissions import SAFE_METHODS, BasePermission

VIEWER = "viewer"
OPERATOR = "operator"
EDITOR = "editor"
ADMIN = "admin"
ROLES = (VIEWER, OPERATOR, EDITOR, ADMIN)

#: The console models a viewer may see (every one the admin or the API shows).
VIEWED_MODELS = (
    "channel",
    "revision",
    "connector",
    "task",
    "worker",
    "lifecycleevent",
    "auditevent",
    # the schema registry (console/services/schemas.py)
    "subject",
    "subjectversion",
    "registryschema",
)
VIEW_PERMISSIONS = frozenset(f"console.view_{model}" for model in VIEWED_MODELS)

VIEW_CHANNEL = "console.view_channel"
OPERATE_CHANNEL = "console.operate_channel"
OPERATE_WORKER = "console.operate_worker"
ADD_CHANNEL = "console.add_channel"
CHANGE_CHANNEL = "console.change_channel"
DELETE_CHANNEL = "console.delete_channel"
#: Registering and deleting schema versions (the editor's); setting compatibility levels
#: (the registry's config) is no role's: superusers', or a group's that is granted it.
REGISTER_SCHEMA = "console.add_subjectversion"
DELETE_SCHEMA = "console.delete_subjectversion"
SET_SCHEMA_CONFIG = "console.change_registry_config"
MANAGE_TEAM = "console.manage_team"

ROLE_PERMISSIONS: dict[str, frozenset[str]] = {
    VIEWER: VIEW_PERMISSIONS,
    OPERATOR: VIEW_PERMISSIONS | {OPERATE_CHANNEL, OPERATE_WORKER},
    # Saving a channel writes a revision, so an editor also adds revisions.
    EDITOR: VIEW_PERMISSIONS
    | {ADD_CHANNEL, CHANGE_CHANNEL, DELETE_CHANNEL, "console.add_revision"}
    | {REGISTER_SCHEMA, DELETE_SCHEMA},
}
ROLE_PERMISSIONS[ADMIN] = frozenset().union(*ROLE_PERMISSIONS.values()) | {MANAGE_TEAM}

#: The role to name in a refusal, for each permission a role grants.
ROLE_FOR_PERMISSION = {
    **{perm: VIEWER for perm in VIEW_PERMISSIONS},
    OPERATE_CHANNEL: OPERATOR,
    OPERATE_WORKER: OPERATOR,
    ADD_CHANNEL: EDITOR,
    CHANGE_CHANNEL: EDITOR,
    DELETE_CHANNEL: EDITOR,
    REGISTER_SCHEMA: EDITOR,
    DELETE_SCHEMA: EDITOR,
    MANAGE_TEAM: ADMIN,
}


# -- roles in teams ---------------------------------------------------------------------------

_CACHE = "_sluice_team_roles"


def team_roles(user) -> dict[int, frozenset[str]]:
    """``{team id: the user's roles there}``, read once per user object (a request's)."""
    cached = getattr(user, _CACHE, None)
    if cached is not None:
        return cached
    from console.models import Membership

    found: dict[int, set[str]] = {}
    if user.is_authenticated and user.is_active:
        for team_id, role in Membership.objects.filter(user=user).values_list("team_id", "role"):
            found.setdefault(team_id, set()).add(role)
    roles = {team_id: frozenset(names) for team_id, names in found.items()}
    setattr(user, _CACHE, roles)
    return roles


def visible_team_ids(user) -> set[int] | None:
    """The teams whose objects ``user`` may see; ``None`` for a site admin (every team)."""
    if user.is_authenticated and user.is_active and user.is_superuser:
        return None
    return set(team_roles(user)) if user.is_authenticated else set()


def visible(queryset, user, team_field: str = "team"):
    """``queryset`` narrowed to the teams ``user`` may see (:func:`visible_team_ids`);
    ``team_field`` is the lookup of the rows' team (``channel__team`` for a channel's)."""
    teams = visible_team_ids(user)
    if teams is None:
        return queryset
    return queryset.filter(**{f"{team_field}__in": teams})


def visible_teams(user):
    """The teams ``user`` may see (every team for a site admin), as a queryset."""
    from console.models import Team

    return visible(Team.objects.all(), user, "pk")


def team_of(obj) -> int | None:
    """The id of the team ``obj`` belongs to: a team itself, anything with a ``team_id``, or
    anything of a channel's (``channel``); ``None`` for what belongs to no team."""
    from console.models import Team

    if isinstance(obj, Team):
        return obj.pk
    if getattr(obj, "team_id", None) is not None:
        return obj.team_id
    channel = getattr(obj, "channel", None)
    return getattr(channel, "team_id", None)


def team_name(obj) -> str | None:
    """The name of the team ``obj`` belongs to (:func:`team_of`)."""
    from console.models import Team

    team = team_of(obj)
    if team is None:
        return None
    return Team.objects.filter(pk=team).values_list("name", flat=True).first()


def role_permissions(roles: Iterable[str]) -> frozenset[str]:
    """What holding ``roles`` grants."""
    return frozenset().union(*(ROLE_PERMISSIONS.get(role, frozenset()) for role in roles))


class TeamRoles:
    """The authentication backend that answers permissions from a user's roles in teams
    (``AUTHENTICATION_BACKENDS``): without an object, in any of the user's teams; with one,
    in its team (:func:`team_of`). It authenticates nobody."""

    def authenticate(self, request, **credentials):
        return None

    def get_all_permissions(self, user, obj=None) -> set[str]:
        if not (user.is_authenticated and user.is_active):
            return set()
        roles = team_roles(user)
        if obj is None:
            held: Iterable[str] = (role for names in roles.values() for role in names)
        else:
            team = team_of(obj)
            held = roles.get(team, frozenset()) if team is not None else ()
        return set(role_permissions(held))

    def has_perm(self, user, perm: str, obj=None) -> bool:
        return perm in self.get_all_permissions(user, obj)


def _team(team=None):
    from console.models import Team, default_team_id

    if team is None:
        return Team.objects.get(pk=default_team_id())
    if isinstance(team, str):
        return Team.objects.get(name=team)
    return team


def grant_role(user, role: str, team=None) -> None:
    """Give ``user`` ``role`` in ``team`` (a :class:`~console.models.Team`, its name, or the
    ``default`` team). Raises ``ValueError`` for an unknown role."""
    from console.models import Membership

    _check_role(role)
    Membership.objects.get_or_create(user=user, team=_team(team), role=role)
    forget_cached_roles(user)


def revoke_role(user, role: str, team=None) -> None:
    """Take ``role`` in ``team`` from ``user``; nothing happens if they did not hold it."""
    from console.models import Membership

    _check_role(role)
    Membership.objects.filter(user=user, team=_team(team), role=role).delete()
    forget_cached_roles(user)


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}: the roles are {', '.join(ROLES)}")


def forget_cached_roles(user) -> None:
    """Drop what this user object remembers of its roles and permissions."""
    for cache in (_CACHE, "_perm_cache", "_user_perm_cache", "_group_perm_cache"):
        user.__dict__.pop(cache, None)


def roles_of(user, team=None) -> list[str]:
    """The roles ``user`` holds in ``team`` (default: in any team), in the order of
    :data:`ROLES`."""
    if not user.is_authenticated:
        return []
    roles = team_roles(user)
    if team is None:
        names: set[str] = set().union(*roles.values()) if roles else set()
    else:
        names = set(roles.get(_team(team).pk, frozenset()))
    return [role for role in ROLES if role in names]


def capabilities(user, obj=None) -> dict[str, bool]:
    """What ``user`` may do, as the console's buttons need it: view, operate (channels),
    operate workers and edit; in ``obj``'s team (a team or a team's object), else anywhere."""
    if not user.is_authenticated:
        return {"view": False, "operate": False, "operate_workers": False, "edit": False}
    return {
        "view": may(user, VIEW_CHANNEL, obj),
        "operate": may(user, OPERATE_CHANNEL, obj),
        "operate_workers": may(user, OPERATE_WORKER, obj),
        "edit": all(may(user, perm, obj) for perm in (ADD_CHANNEL, CHANGE_CHANNEL, DELETE_CHANNEL)),
    }


def may(user, perm: str, obj=None) -> bool:
    """Whether ``user`` holds ``perm`` in the team of ``obj``; for no object or one of no team
    (a runtime worker, the site's), in any team. A permission granted by hand counts in every
    team the user sees (:func:`site_grant`)."""
    if obj is None or team_of(obj) is None:
        return user.has_perm(perm)
    return user.has_perm(perm, obj) or site_grant(user, perm)


def site_grant(user, perm: str) -> bool:
    """Whether ``perm`` was granted by hand to ``user`` or to a Django group of theirs (Django's
    own permissions): such a grant holds in every team the user can see."""
    from django.contrib.auth.backends import ModelBackend

    return ModelBackend().has_perm(user, perm)


def denial(permission: str, doing: str, team: str | None = None) -> str:
    """The refusal message: which role (and permission) ``doing`` needs, in which team."""
    where = f" in the team {team}" if team else ""
    role = ROLE_FOR_PERMISSION.get(permission)
    if role is None:
        return f"You need the permission {permission} to {doing}{where}."
    return f"You need the {role} role ({permission}) to {doing}{where}."


# -- the API ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Need:
    """What one API operation needs: a permission, and how to describe the operation."""

    permission: str
    """``""``: any authenticated user."""
    doing: str


def seeing(model: str = "channel", what: str = "channels") -> Need:
    """Reading: the view permission of ``model``."""
    return Need(f"console.view_{model}", f"see {what}")


OPERATE = {
    name: Need(OPERATE_CHANNEL, f"{name} channels")
    for name in ("start", "stop", "pause", "resume", "restart")
}
DRAIN_WORKERS = Need(OPERATE_WORKER, "drain runtime workers or put them back in service")
FORGET_WORKERS = Need(OPERATE_WORKER, "forget runtime workers")
ALTER_OFFSETS = Need(OPERATE_CHANNEL, "change channel offsets")
RUN_REPLAYS = Need(OPERATE_CHANNEL, "start or cancel channel replays")
CREATE = Need(ADD_CHANNEL, "create channels")
CHANGE = Need(CHANGE_CHANNEL, "change channels")
DELETE = Need(DELETE_CHANNEL, "delete channels")
SEE_SCHEMAS = Need("console.view_subject", "see schemas")
REGISTER_SCHEMAS = Need(REGISTER_SCHEMA, "register schemas")
DELETE_SCHEMAS = Need(DELETE_SCHEMA, "delete schemas")
SET_SCHEMA_CONFIG_NEED = Need(SET_SCHEMA_CONFIG, "set schema compatibility levels")
MANAGE_INGEST_TOKENS = Need(CHANGE_CHANNEL, "issue or revoke ingestion tokens")
#: Any authenticated user, whatever their roles (e.g. asking what they may do).
AUTHENTICATED = Need("", "ask")


class RolePermission(BasePermission):
    """The API's default permission: each operation needs the permission of its role.

    A view says what each of its operations needs in ``required_permissions``, keyed by
    viewset action (``start``) or, for a plain APIView, by HTTP method (``patch``); the
    values are :class:`Need`. A view that declares nothing gets the safe default: reading
    (GET, HEAD, OPTIONS) needs the view permission of the view's model (``view_channel``
    when it has none) and anything else is refused to all but superusers. Anonymous
    requests are refused with 401 by DRF (the authenticators' challenge), refusals of an
    authenticated user are 403 naming the role and permission missing.

    A view with rules of another kind sets its own ``permission_classes`` (HTTP ingestion:
    the channel's token, console/api/ingest/authentication.py); this class then does not run.
    """

    message = "You do not have permission to do this."

    def has_permission(self, request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        need = required(request, view)
        if need is None:
            self.message = (
                f"{request.method} on this endpoint is reserved to superusers "
                "(it declares no permission)."
            )
            return request.user.is_superuser
        if not need.permission or request.user.has_perm(need.permission):
            return True
        self.message = denial(need.permission, need.doing)
        return False

    def has_object_permission(self, request, view, obj) -> bool:
        """The permission again, in the team of ``obj`` (:func:`team_of`): a role in another
        team does not count. The caller found ``obj`` among the objects the user may see
        (:func:`visible_team_ids`), so a refusal here is a 403, never a hint of another
        team's object."""
        need = required(request, view)
        if need is None:
            return request.user.is_superuser
        if not need.permission or may(request.user, need.permission, obj):
            return True
        self.message = denial(need.permission, need.doing, team_name(obj))
        return False


def required(request, view) -> Need | None:
    """What ``request`` needs on ``view``; ``None`` for an undeclared unsafe operation."""
    declared: dict[str, Need] = getattr(view, "required_permissions", {})
    key = getattr(view, "action", None) or request.method.lower()
    if key in declared:
        return declared[key]
    if request.method in SAFE_METHODS:
        queryset = getattr(view, "queryset", None)
        model = getattr(queryset, "model", None)
        if model is not None and model._meta.app_label == "console":
            return seeing(model._meta.model_name, str(model._meta.verbose_name_plural))
        return Need(VIEW_CHANNEL, "use the console")
    return None
