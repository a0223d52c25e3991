"""The audit trail's request side: every state-changing request to ``/api/`` and ``/admin/``.

:class:`AuditMiddleware` records one :class:`~console.models.AuditEvent` per POST, PUT,
PATCH or DELETE request under ``/api/`` or ``/admin/``, refused ones (401, 403, 400, 409…)
included: who (the user, or ``"anonymous"``), what (an action such as ``channel.start`` or
``admin.channel.change``, the object type and id), the redacted body, the HTTP status,
when, from where (``REMOTE_ADDR``, or the nearest ``X-Forwarded-For`` hop that is not a
proxy listed in ``SLUICE_TRUSTED_PROXIES`` when the request comes through one; sign-in
throttling counts failures by the same address), the user agent and ``via``.

Not recorded: HTTP ingestion (``POST /api/v1/channels/{name}/events``, data at high
volume, authenticated by its own token), the read-only POSTs (event-pattern test, plugin
config validation) and sign-in forms, whose outcome the auth signals below record
(``auth.login``, ``auth.login_failed``, ``auth.logout``) wherever the user signs in (a single
sign-on's ``auth.login`` with its provider and the groups it asserted), with
``auth.lockout`` when too many failures lock a user name out from an address
(:mod:`console.signin`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from axes.signals import user_locked_out
from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, QueryDict
from django.urls import Resolver404, resolve

from console.models import Channel, Worker
from console.services.audit_trail import record_audit, redact_body
from console.strict_json import StrictJSONError, loads_strict

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
AUDITED_PREFIXES = {
    "/api/": "api",
    "/admin/": "admin",
    "/connect/": "connect",
    "/schema-registry/": "schema-registry",
}
#: A body is read for the record up to this size (bigger ones keep only their size).
MAX_BODY_READ = 1024 * 1024

#: API routes (URL names in the ``api`` namespace) that are never recorded.
NOT_AUDITED_API = frozenset(
    {
        "channel-events",  # HTTP ingestion: data, not an operation
        "event-pattern-test",  # read-only
        "event-pattern-test-rules",  # read-only
        "plugin-validate",  # read-only
        "plugin-validate-by-type",  # read-only
        "schema-subject-check",  # read-only: what registering would do
    }
)
#: Sign-in and sign-out forms: the auth signals record them (once, with the outcome).
SIGN_IN_URL_NAMES = frozenset({"login", "logout"})

#: ``(URL name, method)`` → action, for the API's channel operations.
API_ACTIONS = {
    ("channel-list", "POST"): "channel.create",
    ("channel-detail", "PUT"): "channel.update",
    ("channel-detail", "PATCH"): "channel.update",
    ("channel-detail", "DELETE"): "channel.delete",
    ("channel-start", "POST"): "channel.start",
    ("channel-stop", "POST"): "channel.stop",
    ("channel-pause", "POST"): "channel.pause",
    ("channel-resume", "POST"): "channel.resume",
    ("channel-restart", "POST"): "channel.restart",
    ("channel-bulk", "POST"): "channel.bulk",  # and one row per channel (services.fleet)
    ("channel-offsets", "PATCH"): "channel.offsets.alter",
    ("channel-offsets", "DELETE"): "channel.offsets.reset",
    ("channel-offsets-copy", "POST"): "channel.offsets.copy",
    ("channel-discovery", "PUT"): "channel.discovery",
    ("channel-dead-letter-redrive", "POST"): "channel.dead_letters.redrive",
    ("channel-ingest-token", "POST"): "channel.ingest_token.rotate",
    ("channel-replay-list", "POST"): "channel.replay.start",
    ("channel-replay-detail", "DELETE"): "channel.replay.cancel",
    ("channel-ingest-token", "DELETE"): "channel.ingest_token.revoke",
    ("team-detail", "PATCH"): "team.quotas",
    ("worker-drain", "POST"): "worker.drain",
    ("worker-undrain", "POST"): "worker.undrain",
    ("worker-detail", "DELETE"): "worker.forget",
    ("schema-subject-list", "POST"): "schema.register",  # as through /schema-registry/
}
#: ``(URL name, method)`` → action, for the Kafka Connect facade (``/connect/``): the same
#: actions as the API's, recorded with ``via`` ``connect``.
CONNECT_ACTIONS = {
    ("connectors", "POST"): "channel.create",
    ("config", "PUT"): "channel.update",
    ("connector", "DELETE"): "channel.delete",
    ("pause", "PUT"): "channel.pause",
    ("resume", "PUT"): "channel.resume",
    ("stop", "PUT"): "channel.stop",
    ("restart", "POST"): "channel.restart",
    ("task-restart", "POST"): "channel.restart",
    ("offsets", "PATCH"): "channel.offsets.alter",
    ("offsets", "DELETE"): "channel.offsets.reset",
}
#: ``(URL name, method)`` → action, for the Confluent Schema Registry API
#: (``/schema-registry/``); its read-only POSTs (lookup, compatibility test) are not recorded.
REGISTRY_ACTIONS = {
    ("versions", "POST"): "schema.register",
    ("subject", "DELETE"): "schema.subject.delete",
    ("version", "DELETE"): "schema.version.delete",
    ("config", "PUT"): "schema.config.set",
    ("config", "DELETE"): "schema.config.reset",
    ("subject-config", "PUT"): "schema.config.set",
    ("subject-config", "DELETE"): "schema.config.reset",
    ("mode", "PUT"): "schema.mode.set",
    ("subject-mode", "PUT"): "schema.mode.set",
}
#: Admin views (the suffix of ``<app>_<model>_<view>``) → operation.
ADMIN_OPERATIONS = {"add": "create", "change": "update", "delete": "delete"}


@dataclass
class AuditTarget:
    """What a request is about, worked out before the view runs (a deleted object's
    name is gone afterwards)."""

    via: str
    action: str
    object_type: str = ""
    object_id: str = ""
    changes: dict[str, Any] = field(default_factory=dict)


class AuditMiddleware:
    """Records each audited request after its response (see the module docstring).

    Place it after ``AuthenticationMiddleware``. DRF authenticates in the view and sets
    the user on the request, so the user is read after the response.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        target = audit_target(request)
        team_before = _team_before(target)  # a channel deleted by the request loses its team
        response = self.get_response(request)
        if target is not None:
            record_audit(
                # else the team a view names (a registry's: console/api/schema_registry)
                team_id=team_before if team_before is not None else audited_team(request),
                action=target.action,
                user=getattr(request, "user", None),
                object_type=target.object_type,
                object_id=target.object_id,
                changes=target.changes,
                outcome=response.status_code,
                remote_addr=client_address(request),
                user_agent=request.META.get("HTTP_USER_AGENT", ""),
                via=target.via,
            )
        return response


AUDIT_TEAM = "sluice_audit_team_id"
"""The request attribute a view sets to the team its request acted in (:func:`audited_team`)."""


def audited_team(request: HttpRequest) -> int | None:
    """The team the view said the request acted in (``None``: it said nothing)."""
    return getattr(request, AUDIT_TEAM, None)


def _team_before(target: AuditTarget | None) -> int | None:
    if target is None or target.object_type != "channel" or not target.object_id:
        return None
    return Channel.objects.filter(name=target.object_id).values_list("team_id", flat=True).first()


def audit_target(request: HttpRequest) -> AuditTarget | None:
    """What to record about ``request``; ``None`` when it is not audited."""
    if request.method not in UNSAFE_METHODS:
        return None
    via = next((v for p, v in AUDITED_PREFIXES.items() if request.path.startswith(p)), None)
    if via is None:
        return None
    try:
        match = resolve(request.path_info)
    except Resolver404:
        return AuditTarget(via, f"{via}.{request.method.lower()}", changes={"path": request.path})
    url_name = match.url_name or ""
    if url_name in SIGN_IN_URL_NAMES:
        return None
    if via == "api":
        if "api" in match.namespaces and url_name in NOT_AUDITED_API:
            return None
        return _api_target(request, url_name, match.kwargs)
    if via == "connect":
        return _connect_target(request, url_name, match.kwargs)
    if via == "schema-registry":
        return _registry_target(request, url_name, match.kwargs)
    return _admin_target(request, url_name, match.kwargs)


def _api_target(request: HttpRequest, url_name: str, kwargs: dict[str, Any]) -> AuditTarget:
    body = _body(request)
    method = cast(str, request.method)  # audit_target lets only unsafe methods through
    action = API_ACTIONS.get((url_name, method))
    if action is None:
        # An endpoint added later is still recorded, under its URL name.
        action = f"{url_name.replace('-', '.') or 'api'}.{method.lower()}"
    object_id = str(kwargs.get("name", kwargs.get("worker_id", kwargs.get("team", ""))))
    if action == "channel.create" and isinstance(body, dict):
        object_id = str(body.get("name") or "")
    object_type = "channel" if action.startswith("channel") else url_name.partition("-")[0]
    if action == "schema.register":  # the subject, as the registry API's rows name it
        object_type = "subject"
        object_id = str(body.get("subject") or "") if isinstance(body, dict) else ""
    return AuditTarget("api", action, object_type, object_id, redact_body(body))


def _connect_target(request: HttpRequest, url_name: str, kwargs: dict[str, Any]) -> AuditTarget:
    body = _body(request)
    method = cast(str, request.method)
    action = CONNECT_ACTIONS.get((url_name, method), f"connect.{url_name}.{method.lower()}")
    object_id = str(kwargs.get("name", ""))
    if url_name == "connectors" and isinstance(body, dict):
        object_id = str(body.get("name") or "")
    return AuditTarget("connect", action, "channel", object_id, redact_body(body))


def _registry_target(
    request: HttpRequest, url_name: str, kwargs: dict[str, Any]
) -> AuditTarget | None:
    method = cast(str, request.method)
    # a team's registry (teams/<team>/…) names its routes team-…: the same actions
    action = REGISTRY_ACTIONS.get((url_name.removeprefix("team-"), method))
    if action is None:
        return None  # lookup and compatibility tests: read-only POSTs
    object_id = str(kwargs.get("subject", ""))
    if kwargs.get("version"):
        object_id = f"{object_id}/versions/{kwargs['version']}"
    changes = redact_body(_body(request))
    if request.GET.get("permanent"):
        changes = {**changes, "permanent": request.GET["permanent"]}
    return AuditTarget("schema-registry", action, "subject", object_id, changes)


def _admin_target(
    request: HttpRequest, url_name: str, kwargs: dict[str, Any]
) -> AuditTarget | None:
    model, view = _admin_model_view(url_name)
    form = _form(request)
    object_type = model or "admin"
    object_id = str(kwargs.get("object_id", ""))
    if model == "channel" and object_id:
        object_id = _channel_name(object_id)
    if view == "changelist" and form.get("action"):
        return _admin_bulk_action(request, model, form)
    if view == "lifecycle":  # the channel page's buttons: admin.channel.start, …
        operation = str(kwargs.get("operation", "operate"))
    else:
        operation = ADMIN_OPERATIONS.get(view, view or "post")
    if view == "add":
        object_id = str(form.get("name") or form.get("username") or "")
    action = f"admin.{model}.{operation}" if model else f"admin.{operation}"
    return AuditTarget("admin", action, object_type, object_id, redact_body(form))


def _admin_bulk_action(
    request: HttpRequest, model: str, form: dict[str, Any]
) -> AuditTarget | None:
    name = str(form["action"])
    if name == "delete_selected" and "post" not in form:
        return None  # only the confirmation page: nothing changes until it is confirmed
    selected = request.POST.getlist("_selected_action")
    if model == "channel":
        names = Channel.objects.filter(pk__in=[s for s in selected if s.isdigit()])
        selected = sorted(names.values_list("name", flat=True))
    elif model == "worker":
        ids = Worker.objects.filter(pk__in=[s for s in selected if s.isdigit()])
        selected = sorted(ids.values_list("worker_id", flat=True))
    changes: dict[str, Any] = {"action": name, "selected": selected}
    if form.get("select_across") in ("1", 1):
        changes["select_across"] = True
    return AuditTarget(
        "admin",
        f"admin.{model}.{name}",
        model,
        ",".join(selected),
        redact_body(changes),
    )


def _admin_model_view(url_name: str) -> tuple[str, str]:
    """``("channel", "change")`` for ``console_channel_change``; ``("", name)`` otherwise."""
    from django.contrib import admin

    for model in admin.site._registry:
        prefix = f"{model._meta.app_label}_{model._meta.model_name}_"
        if url_name.startswith(prefix):
            # A model's model_name is always set (its class name, lower-cased).
            return cast(str, model._meta.model_name), url_name[len(prefix) :]
    return "", url_name


def _channel_name(pk: str) -> str:
    if not pk.isdigit():
        return pk
    name = Channel.objects.filter(pk=int(pk)).values_list("name", flat=True).first()
    return name or pk


def _body(request: HttpRequest) -> Any:
    """The request body as JSON or form data, read before the view (which then reads
    the cached copy); ``{"bytes": n}`` for bodies too big, multipart or unparsable."""
    content_type = request.content_type or ""
    length = _content_length(request)
    if length == 0:
        return {}
    if length > MAX_BODY_READ or content_type.startswith("multipart/"):
        return {"bytes": length, "content_type": content_type}
    try:
        raw = request.body
    except Exception:  # already consumed or too big for Django: keep what we know
        return {"bytes": length, "content_type": content_type}
    if content_type == "application/x-www-form-urlencoded":
        return _flat(QueryDict(raw, encoding=request.encoding))
    try:
        # The API's own limits (depth, repeated keys): the view answers 400 for what fails them.
        return loads_strict(raw or b"{}", storable=False)
    except StrictJSONError:
        return {"bytes": length, "content_type": content_type}


def _form(request: HttpRequest) -> dict[str, Any]:
    """The admin's form fields (the admin parses them anyway); files are not kept."""
    if _content_length(request) > MAX_BODY_READ:
        return {}
    try:
        return _flat(request.POST)
    except Exception:
        return {}


def _flat(data: QueryDict) -> dict[str, Any]:
    return {key: values[0] if len(values) == 1 else values for key, values in data.lists()}


def _content_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


# -- where from ------------------------------------------------------------------------------


def client_address(request: HttpRequest) -> str | None:
    """The client's address: ``REMOTE_ADDR``, or, when that is a trusted proxy
    (``SLUICE_TRUSTED_PROXIES``: addresses or networks, ``*`` for any), the nearest
    ``X-Forwarded-For`` hop that is not one.

    Read from the right: each trusted proxy appends the address it received from, so hops
    left of the first untrusted one are whatever the client sent and prove nothing (a client
    that rotated them would otherwise escape sign-in throttling). ``*`` trusts the peer
    whatever its address, not the hops: the one it appended is the client.
    """
    remote = _ip(request.META.get("REMOTE_ADDR", ""))
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if not forwarded or remote is None or not _trusted(remote, any_peer=True):
        return remote
    client = remote
    for hop in reversed(forwarded.split(",")):
        address = _ip(hop)
        if address is None:
            break  # garbage from the client side: stop at the last address proxies vouch for
        client = address
        if not _trusted(address):
            break
    return client


def _trusted(address: str, *, any_peer: bool = False) -> bool:
    ip = ipaddress.ip_address(address)
    for entry in settings.SLUICE_TRUSTED_PROXIES:
        if entry == "*":
            if any_peer:
                return True
            continue
        try:
            if ip in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue
    return False


def _ip(value: str) -> str | None:
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return None


# -- signing in and out ------------------------------------------------------------------------


def _via(request: HttpRequest | None) -> str:
    path = getattr(request, "path", "") or ""
    return next((v for p, v in AUDITED_PREFIXES.items() if path.startswith(p)), "web")


def _request_fields(request: HttpRequest | None) -> dict[str, Any]:
    if request is None or not hasattr(request, "META"):
        return {"via": "web"}
    return {
        "remote_addr": client_address(request),
        "user_agent": request.META.get("HTTP_USER_AGENT", ""),
        "via": _via(request),
    }


@receiver(user_logged_in, dispatch_uid="sluice_audit_login")
def _logged_in(sender, request=None, user=None, **kwargs) -> None:
    record_audit(
        action="auth.login",
        user=user,
        object_type="user",
        object_id=user.get_username() if user is not None else "",
        # A single sign-on says so, with its provider and the groups it asserted
        # (console.oidc); a password sign-in records nothing more.
        changes=getattr(user, "sign_in_details", None) or {},
        **_request_fields(request),
    )


@receiver(user_logged_out, dispatch_uid="sluice_audit_logout")
def _logged_out(sender, request=None, user=None, **kwargs) -> None:
    record_audit(
        action="auth.logout",
        user=user,
        object_type="user",
        object_id=user.get_username() if user is not None else "",
        **_request_fields(request),
    )


@receiver(user_locked_out, dispatch_uid="sluice_audit_lockout")
def _locked_out(sender, request=None, username=None, ip_address=None, **kwargs) -> None:
    # django-axes signals on the attempt that reaches the limit and again on every refused
    # attempt while locked (each one also an auth.login_failed): record the lockout once.
    failures = getattr(request, "axes_failures_since_start", None)
    if failures is not None and failures > settings.AXES_FAILURE_LIMIT:
        return
    fields = _request_fields(request)
    fields["remote_addr"] = ip_address or fields.get("remote_addr")
    record_audit(
        action="auth.lockout",
        object_type="user",
        object_id=str(username or ""),
        changes={
            "username": str(username or ""),
            "failures": failures,
            "cooloff_seconds": int(settings.AXES_COOLOFF_TIME.total_seconds()),
        },
        outcome=429,
        **fields,
    )


@receiver(user_login_failed, dispatch_uid="sluice_audit_login_failed")
def _login_failed(sender, credentials=None, request=None, **kwargs) -> None:
    # Django passes the credentials cleansed (the password replaced); keep the name only.
    username = str((credentials or {}).get("username", ""))
    record_audit(
        action="auth.login_failed",
        object_type="user",
        object_id=username,
        changes={"username": username} if username else {},
        outcome=401,
        **_request_fields(request),
    )
