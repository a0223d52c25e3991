"""Django admin: channels are edited, started and stopped through the services.

Connectors, tasks, workers and lifecycle events are what the control loop records:
read-only here.
"""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest

from console import services
from console.models import Channel, Connector, LifecycleEvent, Revision, Task, Worker
from console.services.specs import normalize_spec, redact_spec


class ReadOnlyAdmin(admin.ModelAdmin):
    """A view-only model admin: the records are written by the control loop."""

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class RevisionInline(admin.TabularInline):
    model = Revision
    fields = ["number", "created_at", "created_by", "pretty_spec"]
    readonly_fields = fields
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


class ChannelForm(forms.ModelForm):
    """Edits the latest spec with its secrets redacted; a marker left in keeps the secret."""

    spec = forms.JSONField(help_text="The channel spec as JSON: source, transforms, sink.")

    class Meta:
        model = Channel
        fields = ["name", "description"]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.stored_spec = None
        if self.instance.pk:
            revision = self.instance.latest_revision_obj()
            self.stored_spec = revision.spec if revision else None
            self.fields["spec"].initial = redact_spec(self.stored_spec)

    def clean_spec(self):
        spec = self.cleaned_data["spec"]
        try:
            normalize_spec(spec, stored=self.stored_spec)
        except services.InvalidSpec as exc:
            raise ValidationError(
                [f"{path or '(spec)'}: {'; '.join(msgs)}" for path, msgs in exc.errors.items()]
            ) from exc
        return spec


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    form = ChannelForm
    list_display = [
        "name",
        "target_state",
        "state",
        "latest_revision",
        "deployed_revision",
        "updated",
    ]
    list_filter = ["target_state", "connector__state"]
    search_fields = ["name", "description"]
    readonly_fields = ["target_state", "state", "created", "updated", "created_by"]
    inlines = [RevisionInline]
    actions = ["start_channels", "stop_channels"]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).with_summary()

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
        return [*fields, "name"] if obj is not None else fields

    @admin.display(description="state", ordering="connector__state")
    def state(self, channel: Channel) -> str:
        return channel.state

    @admin.display(description="revision", ordering="latest_revision")
    def latest_revision(self, channel: Channel) -> int | None:
        return getattr(channel, "latest_revision", None)

    @admin.display(description="deployed")
    def deployed_revision(self, channel: Channel) -> int | None:
        connector = getattr(channel, "connector", None)
        return connector.revision.number if connector and connector.revision else None

    def save_model(self, request: HttpRequest, obj: Channel, form: ChannelForm, change: bool):
        data = form.cleaned_data
        if change:
            services.update_channel(
                obj, spec=data["spec"], description=data["description"], user=request.user
            )
        else:
            created = services.create_channel(
                name=data["name"],
                spec=data["spec"],
                description=data["description"],
                user=request.user,
            )
            obj.pk = created.pk
        obj.refresh_from_db()

    def delete_model(self, request: HttpRequest, obj: Channel) -> None:
        services.delete_channel(obj, user=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for channel in queryset:
            services.delete_channel(channel, user=request.user)

    @admin.action(description="Start selected channels")
    def start_channels(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._apply(request, queryset, services.start_channel, "start")

    @admin.action(description="Stop selected channels")
    def stop_channels(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._apply(request, queryset, services.stop_channel, "stop")

    def _apply(self, request: HttpRequest, queryset: QuerySet, operation, verb: str) -> None:
        done = 0
        for channel in queryset:
            try:
                operation(channel, user=request.user)
                done += 1
            except services.RuntimeUnavailable as exc:
                self.message_user(request, f"{channel.name}: {exc}", messages.ERROR)
        if done:
            self.message_user(request, f"Asked {done} channel(s) to {verb}.", messages.SUCCESS)


@admin.register(Connector)
class ConnectorAdmin(ReadOnlyAdmin):
    list_display = ["runtime_id", "state", "worker", "revision", "generation", "state_changed_at"]
    list_filter = ["state"]
    search_fields = ["runtime_id", "worker__worker_id"]
    list_select_related = ["revision__channel", "worker"]


@admin.register(Task)
class TaskAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "state", "worker_id", "topic", "partition", "offset", "lag"]
    list_filter = ["state"]
    search_fields = ["connector__runtime_id", "topic"]
    list_select_related = ["connector"]


@admin.register(Worker)
class WorkerAdmin(ReadOnlyAdmin):
    list_display = ["worker_id", "host", "pid", "state", "last_heartbeat", "started_at"]
    list_filter = ["state"]
    search_fields = ["worker_id", "host"]


@admin.register(LifecycleEvent)
class LifecycleEventAdmin(ReadOnlyAdmin):
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
