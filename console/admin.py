"""Django admin: channels are edited, started, stopped, paused, resumed and restarted
through the services (bulk actions on the list, buttons on each channel's page).

Connectors, tasks, workers and lifecycle events are what the control loop records:
read-only here. States show as coloured badges.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Q, QuerySet
from django.http import (
    HttpRequest,
    HttpResponseForbidden,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html

from console import errors, permissions, services
from console.choices import (
    HOSTED_TARGETS,
    ConnectorState,
    ShownState,
    TargetState,
    WorkerService,
    WorkerState,
)
from console.models import (
    AuditEvent,
    Channel,
    ChannelQuerySet,
    Connector,
    LifecycleEvent,
    Membership,
    Revision,
    SignInGroupRule,
    Task,
    Team,
    Worker,
)
from console.selectors import reporting
from console.selectors.restart_policy import MODEL_FIELDS as POLICY_FIELDS
from console.selectors.specs import normalize_spec, redact_spec
from console.services import quotas, team_policy
from console.services import workers as worker_services
from console.strict_json import StrictJSONError, loads_strict
from pipelines.spec.reach import InvalidReach, parse_reach

#: Badge colours by state (connector, task, target and worker states share one palette).
BADGE_COLOURS: dict[str, str] = {
    ConnectorState.RUNNING: "#2e7d32",
    ConnectorState.PAUSED: "#b26a00",
    ConnectorState.STOPPED: "#616161",
    ConnectorState.FAILED: "#c62828",
    ConnectorState.RESTARTING: "#1565c0",
    ConnectorState.UNASSIGNED: "#6a1b9a",
    ShownState.NOT_REPORTING: "#4a148c",
    WorkerState.ALIVE: "#2e7d32",
    WorkerState.DEAD: "#c62828",
    WorkerService.IN_SERVICE: "#2e7d32",
    WorkerService.DRAINING: "#b26a00",
    WorkerService.DRAINED: "#616161",
}


def state_badge(state: str | None) -> str:
    """A state as a coloured pill (the text stays, for colour-blind readers and search)."""
    if not state:
        return "-"
    colour = BADGE_COLOURS.get(state, "#455a64")
    return format_html(
        '<span class="sluice-state" style="background:{};color:#fff;padding:1px 7px;'
        'border-radius:9px;font-size:11px;font-weight:600;letter-spacing:.03em">{}</span>',
        colour,
        state,
    )


@dataclass(frozen=True)
class LifecycleOperation:
    """One of the buttons and bulk actions: a service call and how to talk about it."""

    name: str
    label: str
    call: Callable[..., object]


def _restart(channel: Channel, *, user) -> object:
    # The admin's restart is the whole driver, failed or not (KIP-745's include_tasks=true).
    return services.restart_channel(channel, include_tasks=True, only_failed=False, user=user)


LIFECYCLE_OPERATIONS = {
    op.name: op
    for op in (
        LifecycleOperation("start", "Start", services.start_channel),
        LifecycleOperation("stop", "Stop", services.stop_channel),
        LifecycleOperation("pause", "Pause", services.pause_channel),
        LifecycleOperation("resume", "Resume", services.resume_channel),
        LifecycleOperation("restart", "Restart", _restart),
    )
}


class ReadOnlyAdmin(admin.ModelAdmin):
    """A view-only model admin: the records are written by the control loop.

    ``team_field`` is the lookup of a row's team (``channel__team``): a user sees only their
    teams' rows (a site admin all); ``None`` for rows of no team (runtime workers)."""

    team_field: str | None = None

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        rows = super().get_queryset(request)
        if self.team_field is None:
            return rows
        return permissions.visible(rows, request.user, self.team_field)

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class RevisionInline(admin.TabularInline):
    model = Revision
    fields = ["number", "created_at", "created_by", "pretty_spec"]
    readonly_fields = cast(list[str], fields)  # fields is a flat list of names
    ordering = ["-number"]
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    @admin.display(description="spec")
    def pretty_spec(self, revision: Revision) -> str:
        return json.dumps(redact_spec(revision.spec), indent=2, sort_keys=True)


class StrictJSONFormField(forms.JSONField):
    """The admin's JSON text parsed as the API parses a body (``loads_strict``): depth and
    duplicate keys are form errors, never a 500."""

    def to_python(self, value):
        if self.disabled or value in self.empty_values or not isinstance(value, str):
            return super().to_python(value)
        try:
            return loads_strict(value)
        except StrictJSONError as exc:
            raise ValidationError(str(exc).removeprefix("JSON parse error - "), "invalid") from None

    def bound_data(self, data, initial):
        if self.disabled or not isinstance(data, str):
            return super().bound_data(data, initial)
        try:
            return loads_strict(data)
        except StrictJSONError:
            return forms.fields.InvalidJSONInput(data)


class ChannelForm(forms.ModelForm):
    """Edits the latest spec with its secrets redacted; a marker left in keeps the secret.

    The restart policy fields may be left empty: a new channel takes the defaults, an
    existing one keeps what it has.
    """

    spec = StrictJSONFormField(
        help_text="The channel spec as JSON: source, transforms, then sink or rules (a bus)."
    )

    class Meta:
        model = Channel
        fields = [
            "name",
            "team",
            "description",
            *POLICY_FIELDS.values(),
            "ingest_rate_limit",
            "labels",
        ]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for name in POLICY_FIELDS.values():
            if name in self.fields:  # absent for a view-only user
                self.fields[name].required = False
        self.stored_spec = None
        if self.instance.pk:
            revision = self.instance.latest_revision_obj()
            self.stored_spec = revision.spec if revision else None
            self.fields["spec"].initial = redact_spec(self.stored_spec)

    def clean_team(self):
        """Left empty where the user may create in one team only (ChannelAdmin.get_form):
        that team."""
        team = self.cleaned_data.get("team")
        field = self.fields["team"]
        if team is None and field.initial is not None:
            team = Team.objects.get(pk=field.initial)
        if team is None:
            raise ValidationError("Choose the team of the channel.")
        reached = None if self.instance.pk else quotas.channels_quota_reached(team)
        if reached is not None:  # the service refuses it too, under the team's lock
            raise ValidationError(str(reached))
        return team

    def clean_spec(self):
        spec = self.cleaned_data["spec"]
        # Within its team's reach: the channel's, or for a new one the team chosen above
        # (cleaned before the spec: the form's fields come first).
        team = self.cleaned_data.get("team") or getattr(self.instance, "team", None)
        try:
            # Normalised here, once: the service takes it as it is.
            return normalize_spec(spec, stored=self.stored_spec, team=team)
        except errors.InvalidSpec as exc:
            raise ValidationError(
                [f"{path or '(spec)'}: {'; '.join(msgs)}" for path, msgs in exc.errors.items()]
            ) from exc

    def restart_policy(self) -> dict:
        """The policy fields that were filled in, keyed as the services take them."""
        data = self.cleaned_data
        return {
            key: data[name]
            for key, name in POLICY_FIELDS.items()
            if data.get(name) not in (None, "")
        }

    def _post_clean(self) -> None:
        # Left empty means "default / unchanged": the services apply the policy, so keep
        # the model's values for the instance's own validation.
        for name in POLICY_FIELDS.values():
            if self.cleaned_data.get(name) in (None, ""):
                self.cleaned_data.pop(name, None)
        # BaseModelForm._post_clean is Django's hook, missing from django-stubs.
        super()._post_clean()  # type: ignore[misc]


class MembershipInline(admin.TabularInline):
    """A team's members and their roles: its team admins and site admins change them."""

    model = Membership
    fields = ["user", "role", "source", "created"]
    readonly_fields = ["source", "created"]
    extra = 0

    def _manages(self, request: HttpRequest, obj) -> bool:
        return obj is not None and permissions.may(request.user, permissions.MANAGE_TEAM, obj)

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        return True  # shown on the page of a team the user sees (TeamAdmin decides)

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return self._manages(request, obj)

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return self._manages(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return self._manages(request, obj)


class SignInGroupRuleInline(admin.TabularInline):
    """The sign-in groups that give roles in this team: site admins' alone."""

    model = SignInGroupRule
    fields = ["group", "role"]
    extra = 0

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_superuser

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_superuser

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_superuser


class TeamForm(forms.ModelForm):
    """A team; its reach validated as the API validates it (:mod:`pipelines.spec.reach`)."""

    reach = StrictJSONFormField(
        required=False,
        help_text=(
            'What the team\'s channels may touch, as JSON: {"topic_prefixes": ["payments."], '
            '"kafka_clusters": ["kafka-1:9092"], "files_roots": ["/srv/data/payments"], '
            '"http_sink": ["api.internal"], '
            '"jdbc_sink": [...], "http_enrich": [...], "schema_registry": [...]}. A key left '
            "out is the site's default (its environment); an empty list reaches nothing."
        ),
    )

    class Meta:
        model = Team
        fields = "__all__"

    def clean_reach(self):
        try:
            return parse_reach(self.cleaned_data.get("reach") or {}).given()
        except InvalidReach as exc:
            raise ValidationError(
                [f"{path or '(reach)'}: {'; '.join(msgs)}" for path, msgs in exc.errors.items()]
            ) from None


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    """Teams: site admins create and remove them, set their sign-in rules and their reach; a
    team's admins manage its members; members see their own teams only."""

    form = TeamForm
    list_display = ["name", "description", "created"]
    search_fields = ["name", "description"]
    inlines = [MembershipInline, SignInGroupRuleInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return permissions.visible(super().get_queryset(request), request.user, "pk")

    def get_readonly_fields(self, request: HttpRequest, obj=None) -> list[str]:
        fields = ["name", "created"] if obj is not None else ["created"]
        if not request.user.is_superuser:  # a team's admin manages members, not its policy
            fields += [*quotas.QUOTAS, "reach"]
        return fields

    def get_fieldsets(self, request: HttpRequest, obj=None):
        """The team, then its reach and its quotas in fieldsets of their own."""
        policy = {"reach", *quotas.QUOTAS}
        fields = [name for name in self.get_fields(request, obj) if name not in policy]
        quota_help = (
            "Empty: no limit. Channels and running (or paused) channels are counted by the "
            "console, real-time cores one per source partition; driver cores and memory are "
            "enforced by each runtime worker. A quota reached refuses with 429."
        )
        reach_help = (
            "What the team's channels may touch: checked when a channel is saved and again in "
            "the driver when it starts (docs/users.md, Each team's reach). Set by site admins "
            "only."
        )
        return [
            (None, {"fields": fields}),
            ("Reach", {"fields": ["reach"], "description": reach_help}),
            ("Quotas", {"fields": list(quotas.QUOTAS), "description": quota_help}),
        ]

    def save_model(self, request: HttpRequest, obj: Team, form, change: bool) -> None:
        if "reach" not in form.changed_data:
            super().save_model(request, obj, form, change)
            return
        # The reach is changed (and audited) by the service, after the rest is saved.
        reach = obj.reach
        obj.reach = Team.objects.get(pk=obj.pk).reach if change else {}
        super().save_model(request, obj, form, change)
        obj.reach = team_policy.set_reach(obj, reach, by=cast(User, request.user)).reach

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser or bool(permissions.visible_team_ids(request.user))

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        return self.has_module_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_superuser or (
            obj is not None and permissions.may(request.user, permissions.MANAGE_TEAM, obj)
        )

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_superuser


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    form = ChannelForm
    change_form_template = "admin/console/channel/change_form.html"
    list_display = [
        "name",
        "target_state_badge",
        "state",
        "latest_revision",
        "deployed_revision",
        "drift",
        "labels_text",
        "updated",
    ]
    list_filter = ["target_state", "connector__state"]
    search_fields = ["name", "description"]
    readonly_fields = ["target_state", "state", "created", "updated", "created_by"]
    inlines = [RevisionInline]
    actions = [
        "start_channels",
        "stop_channels",
        "pause_channels",
        "resume_channels",
        "restart_channels",
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # Channel.objects is ChannelQuerySet.as_manager(); ModelAdmin's stub says QuerySet.
        # Only the user's teams' channels: another team's is not found (404), as in the API.
        channels = cast(ChannelQuerySet, super().get_queryset(request)).with_summary()
        return permissions.visible(channels, request.user)

    def formfield_for_foreignkey(self, db_field, request: HttpRequest, **kwargs):
        if db_field.name == "team":  # a new channel: one of the teams the user may create in
            teams = permissions.visible_teams(request.user)
            allowed = [
                t.pk for t in teams if permissions.may(request.user, permissions.ADD_CHANNEL, t)
            ]
            kwargs["queryset"] = Team.objects.filter(pk__in=allowed)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_form(self, request: HttpRequest, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        team = form.base_fields.get("team")
        if obj is None and team is not None:
            allowed = list(team.queryset[:2])  # type: ignore[attr-defined]
            if len(allowed) == 1:  # the one team the user may create in: no need to ask
                team.initial = allowed[0].pk
                team.required = False
        return form

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return permissions.may(request.user, permissions.CHANGE_CHANNEL, obj)

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return permissions.may(request.user, permissions.DELETE_CHANNEL, obj)

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        return permissions.may(request.user, permissions.VIEW_CHANNEL, obj) or (
            permissions.may(request.user, permissions.CHANGE_CHANNEL, obj)
        )

    def get_inline_instances(self, request: HttpRequest, obj=None) -> list:
        # A new channel has no revisions yet: its spec field becomes revision 1.
        return super().get_inline_instances(request, obj) if obj is not None else []

    def get_deleted_objects(self, objs, request: HttpRequest):
        # The connector, its tasks and revisions go with the channel, deleted by the
        # service; they are read-only in the admin, which must not block the deletion.
        deleted, model_count, _perms_needed, protected = super().get_deleted_objects(objs, request)
        return deleted, model_count, set(), protected

    def get_readonly_fields(self, request: HttpRequest, obj=None) -> list[str]:
        fields = list(self.readonly_fields)
        return [*fields, "name", "team"] if obj is not None else fields

    @admin.display(description="state", ordering="connector__state")
    def state(self, channel: Channel) -> str:
        return state_badge(reporting.shown_state(getattr(channel, "connector", None)))

    @admin.display(description="labels")
    def labels_text(self, channel: Channel) -> str:
        return ", ".join(f"{key}={value}" for key, value in sorted(channel.labels.items()))

    @admin.display(description="desired state", ordering="target_state")
    def target_state_badge(self, channel: Channel) -> str:
        return state_badge(channel.target_state)

    @admin.display(description="drift")
    def drift(self, channel: Channel) -> str:
        """Deployed revision is not the latest (start again to deploy it), in words; no drift
        is the healthy case and shows as the empty value, not as a red cross."""
        deployed = self.deployed_revision(channel)
        latest = self.latest_revision(channel)
        if deployed is None or deployed == latest:
            return self.get_empty_value_display()
        return format_html(
            '<span class="sluice-drift" style="color:#8a5200;font-weight:600" '
            'title="Start the channel again to deploy the latest revision">'
            "drift: runs {} of {}</span>",
            deployed,
            latest,
        )

    @admin.display(description="revision", ordering="latest_revision")
    def latest_revision(self, channel: Channel) -> int | None:
        return getattr(channel, "latest_revision", None)

    @admin.display(description="deployed")
    def deployed_revision(self, channel: Channel) -> int | None:
        connector = getattr(channel, "connector", None)
        return connector.revision.number if connector and connector.revision else None

    # The admin is for signed-in staff only: request.user is a User (here and below).
    def save_model(self, request: HttpRequest, obj: Channel, form: ChannelForm, change: bool):
        data = form.cleaned_data
        if change:
            services.update_channel(
                obj,
                spec=data["spec"],
                description=data["description"],
                restart_policy=form.restart_policy(),
                ingest_rate_limit=data.get("ingest_rate_limit"),
                labels=data.get("labels"),
                user=cast(User, request.user),
            )
        else:
            created = services.create_channel(
                name=data["name"],
                spec=data["spec"],
                description=data["description"],
                restart_policy=form.restart_policy(),
                ingest_rate_limit=data.get("ingest_rate_limit"),
                labels=data.get("labels") or {},
                team=data["team"],
                user=cast(User, request.user),
            )
            obj.pk = created.pk
        obj.refresh_from_db()

    def delete_model(self, request: HttpRequest, obj: Channel) -> None:
        services.delete_channel(obj, user=cast(User, request.user))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for channel in queryset:
            services.delete_channel(channel, user=cast(User, request.user))

    # -- lifecycle: bulk actions and the buttons of the change page ---------------------------
    # Operating is its own permission (the operator role), not "change" (the editor's):
    # the actions and buttons are shown, and run, only for users who have it.

    def has_operate_permission(self, request: HttpRequest, obj=None) -> bool:
        """May start, stop, pause, resume and restart channels (``console.operate_channel``):
        ``obj``'s, in its team; without one, in some team."""
        return permissions.may(request.user, permissions.OPERATE_CHANNEL, obj)

    def _refuse_operation(self, request: HttpRequest, operation: str) -> None:
        doing = f"{operation} channels"
        self.message_user(
            request, permissions.denial(permissions.OPERATE_CHANNEL, doing), messages.ERROR
        )

    def changelist_view(self, request: HttpRequest, extra_context=None):
        # get_actions hides the lifecycle actions from a user without operate_channel; a
        # forced POST of one gets the reason (Django would silently ignore it).
        if request.method == "POST" and self.has_view_or_change_permission(request):
            operation = request.POST.get("action", "").removesuffix("_channels")
            if operation in LIFECYCLE_OPERATIONS and not self.has_operate_permission(request):
                self._refuse_operation(request, operation)
                return HttpResponseRedirect(request.get_full_path())
        return super().changelist_view(request, extra_context)

    @admin.action(description="Start selected channels", permissions=["operate"])
    def start_channels(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._apply(request, queryset, LIFECYCLE_OPERATIONS["start"])

    @admin.action(description="Stop selected channels", permissions=["operate"])
    def stop_channels(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._apply(request, queryset, LIFECYCLE_OPERATIONS["stop"])

    @admin.action(description="Pause selected channels", permissions=["operate"])
    def pause_channels(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._apply(request, queryset, LIFECYCLE_OPERATIONS["pause"])

    @admin.action(description="Resume selected channels", permissions=["operate"])
    def resume_channels(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._apply(request, queryset, LIFECYCLE_OPERATIONS["resume"])

    @admin.action(description="Restart selected channels", permissions=["operate"])
    def restart_channels(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._apply(request, queryset, LIFECYCLE_OPERATIONS["restart"])

    def _apply(self, request: HttpRequest, queryset: QuerySet, op: LifecycleOperation) -> None:
        if not self.has_operate_permission(request):
            self._refuse_operation(request, op.name)
            return
        done = []
        for channel in queryset:
            if not self.has_operate_permission(request, channel):  # another role in its team
                reason = permissions.denial(
                    permissions.OPERATE_CHANNEL, f"{op.name} channels", channel.team.name
                )
                self.message_user(request, f"{channel.name}: {reason}", messages.ERROR)
            elif self._run(request, channel, op):
                done.append(channel.name)
        if done:
            names = ", ".join(done)
            self.message_user(
                request, f"Asked {len(done)} channel(s) to {op.name}: {names}.", messages.SUCCESS
            )

    def _run(self, request: HttpRequest, channel: Channel, op: LifecycleOperation) -> bool:
        """Call the service; a refusal or an unreachable runtime becomes a message."""
        try:
            result = op.call(channel, user=request.user)
        except (errors.InvalidTransition, errors.QuotaExceeded) as exc:
            self.message_user(request, f"{channel.name}: {exc}", messages.WARNING)
            return False
        except errors.RuntimeUnavailable as exc:
            self.message_user(request, f"{channel.name}: {exc}", messages.ERROR)
            return False
        if isinstance(result, services.RestartPlan) and not result.restarting:
            self.message_user(request, f"{channel.name}: {result.reason}", messages.INFO)
            return False
        return True

    def get_urls(self) -> list:
        lifecycle = path(
            "<path:object_id>/lifecycle/<str:operation>/",
            self.admin_site.admin_view(self.lifecycle_view),
            name="console_channel_lifecycle",
        )
        return [lifecycle, *super().get_urls()]

    def lifecycle_view(self, request: HttpRequest, object_id: str, operation: str):
        """A button of the change page: POST only, operate permission, back to the page."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        op = LIFECYCLE_OPERATIONS.get(operation)
        channel = get_object_or_404(self.get_queryset(request), pk=object_id)
        if op is None or not self.has_view_permission(request, channel):
            raise PermissionDenied
        if not self.has_operate_permission(request, channel):
            # No button was shown: a forced POST is refused outright, with the reason.
            return HttpResponseForbidden(
                permissions.denial(permissions.OPERATE_CHANNEL, f"{op.name} channels"),
                content_type="text/plain; charset=utf-8",
            )
        if self._run(request, channel, op):
            self.message_user(
                request, f"Asked channel {channel.name} to {op.name}.", messages.SUCCESS
            )
        return HttpResponseRedirect(reverse("admin:console_channel_change", args=[channel.pk]))

    def change_view(self, request: HttpRequest, object_id: str, form_url="", extra_context=None):
        extra_context = extra_context or {}
        channel = self.get_object(request, object_id)
        if channel is not None and self.has_operate_permission(request, channel):
            buttons = []
            for op in LIFECYCLE_OPERATIONS.values():
                refusal = _button_refusal(channel, op.name)
                buttons.append(
                    {
                        "label": op.label,
                        "url": reverse(
                            "admin:console_channel_lifecycle", args=[channel.pk, op.name]
                        ),
                        "enabled": refusal is None,
                        "title": refusal or _BUTTON_TITLES.get(op.name, ""),
                    }
                )
            extra_context["lifecycle_buttons"] = buttons
        return super().change_view(request, object_id, form_url, extra_context)


_BUTTON_TITLES = {
    "start": "Deploy the latest saved revision and run it",
    "stop": "Stop the query and release its driver; the checkpoint is kept",
    "pause": "Stop the query, keep its driver warm",
    "resume": "Run the paused query again, with the revision it had",
    "restart": "Restart the revision that runs, from its checkpoint",
}


def _button_refusal(channel: Channel, operation: str) -> str | None:
    """Why a button is greyed out (None: it is not), following the channel's state as the
    console's buttons do: what would change nothing or be refused. The service still checks
    (the page may be stale)."""
    target = channel.target_state
    connector = getattr(channel, "connector", None)
    if operation == "start":
        if target != TargetState.RUNNING or connector is None:
            return None
        if connector.state == ConnectorState.FAILED or connector.finished:
            return None  # a start runs it again
        latest = channel.latest_revision_obj()
        if latest is not None and connector.revision_id != latest.pk:
            return None  # a start deploys the saved revision
        return "It runs its latest revision already"
    if operation == "stop":
        return "It is stopped already" if target == TargetState.STOPPED else None
    if operation == "pause":
        running = target == TargetState.RUNNING
        return None if running else f"Only a running channel pauses ({target})"
    if operation == "resume":
        return None if target == TargetState.PAUSED else f"Only a paused channel resumes ({target})"
    if target == TargetState.STOPPED or connector is None:  # restart
        return "Nothing runs to restart: start it"
    return None


@admin.register(Connector)
class ConnectorAdmin(ReadOnlyAdmin):
    team_field = "channel__team"
    list_display = [
        "runtime_id",
        "state_badge",
        "worker",
        "driver_id",
        "revision",
        "generation",
        "restart_attempts",
        "state_changed_at",
        "status_reason",
    ]
    list_filter = ["state", "finished"]
    search_fields = ["runtime_id", "worker__worker_id", "driver_id"]
    list_select_related = ["revision__channel", "worker"]
    readonly_fields = ["driver_id", "status_reason", "finished"]

    @admin.display(description="state", ordering="state")
    def state_badge(self, connector: Connector) -> str:
        return state_badge(reporting.shown_state(connector))


@admin.register(Task)
class TaskAdmin(ReadOnlyAdmin):
    team_field = "connector__channel__team"
    list_display = ["__str__", "state_badge", "worker_id", "topic", "partition", "offset", "lag"]
    list_filter = ["state"]
    search_fields = ["connector__runtime_id", "topic"]
    list_select_related = ["connector"]

    @admin.display(description="state", ordering="state")
    def state_badge(self, task: Task) -> str:
        return state_badge(task.state)


@admin.register(Worker)
class WorkerAdmin(ReadOnlyAdmin):
    """Runtime workers as the control loop records them; an operator drains them, puts them
    back in service and forgets dead ones (bulk actions, through console/services/workers)."""

    list_display = [
        "worker_id",
        "host",
        "pid",
        "state_badge",
        "service_badge",
        "hosting",
        "last_heartbeat",
        "heartbeat_seen_at",
        "started_at",
        "service_changed_by",
    ]
    list_filter = ["state", "service"]
    search_fields = ["worker_id", "host"]
    actions = ["drain_workers", "undrain_workers", "forget_workers"]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return (
            super()
            .get_queryset(request)
            .annotate(
                _hosting=Count(
                    "connectors",
                    filter=Q(connectors__channel__target_state__in=HOSTED_TARGETS),
                )
            )
        )

    @admin.display(description="state", ordering="state")
    def state_badge(self, worker: Worker) -> str:
        return state_badge(worker.state)

    @admin.display(description="service", ordering="service")
    def service_badge(self, worker: Worker) -> str:
        return state_badge(worker.service)

    @admin.display(description="channels", ordering="_hosting")
    def hosting(self, worker: Worker) -> int:
        """Channels (target RUNNING or PAUSED) assigned to it."""
        return getattr(worker, "_hosting", 0)

    def has_operate_permission(self, request: HttpRequest, obj=None) -> bool:
        """May drain, put back in service and forget workers (``console.operate_worker``)."""
        return request.user.has_perm(permissions.OPERATE_WORKER)

    def changelist_view(self, request: HttpRequest, extra_context=None):
        # get_actions hides the actions from a user without operate_worker; a forced POST of
        # one gets the reason (Django would silently ignore it).
        if (
            request.method == "POST"
            and request.POST.get("action") in self.actions
            and not self.has_operate_permission(request)
        ):
            doing = "drain, return to service or forget runtime workers"
            self.message_user(
                request, permissions.denial(permissions.OPERATE_WORKER, doing), messages.ERROR
            )
            return HttpResponseRedirect(request.get_full_path())
        return super().changelist_view(request, extra_context)

    @admin.action(description="Drain selected workers", permissions=["operate"])
    def drain_workers(self, request: HttpRequest, queryset: QuerySet) -> None:
        for worker in queryset:
            result = worker_services.drain_worker(worker.worker_id, user=cast(User, request.user))
            if not result.changed:
                text = f"{worker.worker_id} is already {result.worker.service}."
            elif result.channels and not result.takers:
                text = (
                    f"Draining {worker.worker_id}: no other worker in service, its "
                    f"{len(result.channels)} channel(s) stay until one is alive."
                )
            else:
                moving = f"{len(result.channels)} channel(s) move to {', '.join(result.takers)}"
                text = f"Draining {worker.worker_id}: " + (
                    moving if result.channels else "it hosts no channel."
                )
            self.message_user(request, text, messages.SUCCESS)

    @admin.action(description="Put selected workers back in service", permissions=["operate"])
    def undrain_workers(self, request: HttpRequest, queryset: QuerySet) -> None:
        names = [w.worker_id for w in queryset]
        for name in names:
            worker_services.undrain_worker(name, user=cast(User, request.user))
        self.message_user(request, f"Back in service: {', '.join(names)}.", messages.SUCCESS)

    @admin.action(description="Forget selected dead workers", permissions=["operate"])
    def forget_workers(self, request: HttpRequest, queryset: QuerySet) -> None:
        for worker in list(queryset):
            try:
                worker_services.forget_worker(worker.worker_id, user=cast(User, request.user))
            except errors.InvalidTransition as exc:
                self.message_user(request, f"{exc}.", messages.WARNING)
            except errors.RuntimeUnavailable as exc:
                self.message_user(request, f"{worker.worker_id}: {exc}", messages.ERROR)
            else:
                self.message_user(request, f"Forgot {worker.worker_id}.", messages.SUCCESS)


@admin.register(LifecycleEvent)
class LifecycleEventAdmin(ReadOnlyAdmin):
    team_field = "channel__team"
    list_display = [
        "created_at",
        "subject_type",
        "subject_id",
        "from_state",
        "to_state",
        "actor",
        "reason",
    ]
    list_filter = ["subject_type", "actor"]
    search_fields = ["subject_id", "reason", "actor"]
    date_hierarchy = "created_at"


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """The audit trail: view-only for everyone, superusers included (rows are never
    changed or deleted here)."""

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # a team's rows and the user's own, as the API's audit list (a site admin: all)
        rows = super().get_queryset(request)
        teams = permissions.visible_team_ids(request.user)
        if teams is None:
            return rows
        return rows.filter(Q(team_id__in=teams) | Q(user=request.user))

    list_display = [
        "created_at",
        "actor",
        "action",
        "object_type",
        "object_id",
        "outcome",
        "remote_addr",
        "via",
    ]
    list_filter = ["via", "object_type", "outcome", "action"]
    search_fields = ["actor", "action", "object_id", "remote_addr"]
    date_hierarchy = "created_at"
    list_select_related = ["user"]
    fields = [
        "created_at",
        "actor",
        "user",
        "action",
        "object_type",
        "object_id",
        "outcome",
        "remote_addr",
        "user_agent",
        "via",
        "pretty_changes",
    ]
    readonly_fields = cast(list[str], fields)  # fields is a flat list of names

    @admin.display(description="changes (redacted request body)")
    def pretty_changes(self, event: AuditEvent) -> str:
        return format_html("<pre>{}</pre>", json.dumps(event.changes, indent=2, sort_keys=True))
