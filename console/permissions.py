"""Roles and the permissions they grant, in one place, for the API, the admin and the UI.

A role is a Django group whose permissions this module keeps in sync with the code
(:func:`sync_roles`, run after every ``migrate``):

* **viewer** sees everything: ``view_*`` on the console's models;
* **operator** is a viewer who may also start, stop, pause, resume and restart channels
  and change their offsets (``console.operate_channel``), and drain, return to service and
  forget runtime workers (``console.operate_worker``);
* **editor** is a viewer who may also create, change and delete channels.

Operator and editor do not include each other; a user may be in both groups. A superuser
may do everything. Permissions, not group names, are what is checked, so a site may also
grant single permissions to a user or to a group of its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth.models import Group, Permission
from django.db import transaction
from rest_framework.permissions import SAFE_METHODS, BasePermission

VIEWER = "viewer"
OPERATOR = "operator"
EDITOR = "editor"
ROLES = (VIEWER, OPERATOR, EDITOR)

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

ROLE_PERMISSIONS: dict[str, frozenset[str]] = {
    VIEWER: VIEW_PERMISSIONS,
    OPERATOR: VIEW_PERMISSIONS | {OPERATE_CHANNEL, OPERATE_WORKER},
    # Saving a channel writes a revision, so an editor also adds revisions.
    EDITOR: VIEW_PERMISSIONS
    | {ADD_CHANNEL, CHANGE_CHANNEL, DELETE_CHANNEL, "console.add_revision"}
    | {REGISTER_SCHEMA, DELETE_SCHEMA},
}

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
}


# -- groups -----------------------------------------------------------------------------------


def sync_roles(using: str = "default") -> None:
    """Create the role groups and give each exactly the permissions listed here.

    Idempotent: run after every ``migrate`` (post_migrate), so a permission added to or
    removed from a role in code reaches existing databases. Other groups are untouched.
    """
    from django.apps import apps
    from django.contrib.auth.management import create_permissions

    # Permissions are created by another post_migrate receiver; make sure they exist
    # whichever receiver runs first (create_permissions is itself idempotent).
    create_permissions(apps.get_app_config("console"), verbosity=0, using=using)
    with transaction.atomic(using=using):
        for role, names in ROLE_PERMISSIONS.items():
            group, _ = Group.objects.using(using).get_or_create(name=role)
            group.permissions.set(_permissions(names, using))


def _permissions(names: Iterable[str], using: str) -> list[Permission]:
    wanted = {tuple(name.split(".", 1)) for name in names}
    found = [
        perm
        for perm in Permission.objects.using(using)
        .filter(codename__in={codename for _, codename in wanted})
        .select_related("content_type")
        if (perm.content_type.app_label, perm.codename) in wanted
    ]
    missing = wanted - {(p.content_type.app_label, p.codename) for p in found}
    if missing:
        names = ", ".join(sorted(f"{app}.{codename}" for app, codename in missing))
        raise LookupError(f"role permissions not in the database (run migrate): {names}")
    return found


def grant_role(user, role: str) -> None:
    """Put ``user`` in the group of ``role`` (created if missing). Raises ``ValueError``
    for an unknown role."""
    group = _role_group(role)
    user.groups.add(group)
    _forget_cached_permissions(user)


def revoke_role(user, role: str) -> None:
    """Take ``user`` out of the group of ``role``; nothing happens if they were not in it."""
    user.groups.remove(_role_group(role))
    _forget_cached_permissions(user)


def _role_group(role: str) -> Group:
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}: the roles are {', '.join(ROLES)}")
    group = Group.objects.filter(name=role).first()
    if group is None or not group.permissions.exists():
        sync_roles()
        group = Group.objects.get(name=role)
    return group


def _forget_cached_permissions(user) -> None:
    for cache in ("_perm_cache", "_user_perm_cache", "_group_perm_cache"):
        user.__dict__.pop(cache, None)


def roles_of(user) -> list[str]:
    """The roles whose group ``user`` is in, in the order viewer, operator, editor."""
    if not user.is_authenticated:
        return []
    names = set(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
    return [role for role in ROLES if role in names]


def capabilities(user) -> dict[str, bool]:
    """What ``user`` may do, as the console's buttons need it: view, operate (channels),
    operate workers and edit."""
    if not user.is_authenticated:
        return {"view": False, "operate": False, "operate_workers": False, "edit": False}
    return {
        "view": user.has_perm(VIEW_CHANNEL),
        "operate": user.has_perm(OPERATE_CHANNEL),
        "operate_workers": user.has_perm(OPERATE_WORKER),
        "edit": user.has_perms([ADD_CHANNEL, CHANGE_CHANNEL, DELETE_CHANNEL]),
    }


def denial(permission: str, doing: str) -> str:
    """The refusal message: which role (and permission) ``doing`` needs."""
    role = ROLE_FOR_PERMISSION.get(permission)
    if role is None:
        return f"You need the permission {permission} to {doing}."
    return f"You need the {role} role ({permission}) to {doing}."


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
