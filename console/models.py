"""The control plane's records.

Tenancy: every logical object belongs to a :class:`Team`; a user's roles are per team
(:class:`Membership`), and a site admin's :class:`SignInGroupRule` rows turn the groups a
single sign-on reports into memberships (:mod:`console.services.teams`).

Logical: :class:`Channel` and its immutable :class:`Revision` history.
Physical (kept current by :func:`console.services.reconcile`): :class:`Connector`,
:class:`Task` and :class:`Worker`. Every transition lands in :class:`LifecycleEvent`.

Only :mod:`console.services` writes these models.
"""

from __future__ import annotations

import secrets
import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from console.choices import (
    ConnectorState,
    MembershipSource,
    RestartPolicyType,
    RunKind,
    RunState,
    SubjectType,
    TargetState,
    TeamRole,
    WorkerService,
    WorkerState,
)
from console.labels import validate_labels

CHANNEL_NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"

channel_name_validator = RegexValidator(
    CHANNEL_NAME_PATTERN,
    "Use 1 to 63 lower-case letters, digits, '-' or '_', starting with a letter or digit.",
)


TEAM_NAME_PATTERN = CHANNEL_NAME_PATTERN
team_name_validator = RegexValidator(
    TEAM_NAME_PATTERN,
    "Use 1 to 63 lower-case letters, digits, '-' or '_', starting with a letter or digit.",
)

DEFAULT_TEAM = "default"
"""The team an installation's objects went to when teams arrived (migration 0027), and the
one an object is created in when nothing names another (a single-team installation)."""

SIGN_IN_GROUP_MAX_LENGTH = 255


CHANNEL_NAME_TAKEN = (
    "This name is taken. Channel names are unique across the site, as bucket names are: the "
    "runtime knows a channel by its name (its connector, topics and metrics). Choose another."
)
"""The refusal of a taken channel name: the same whichever team holds it (it says neither)."""

DESCRIPTION_MAX_LENGTH = 2000
"""The longest channel description accepted (API and admin; a 1 MB one was saved before)."""


def new_checkpoint_key(name: str) -> str:
    """The checkpoint key of a channel created now (see :attr:`Channel.checkpoint_key`):
    ``<name>.<12 random hex digits>``, unique per channel, so that a channel created under a
    deleted one's name never resumes its checkpoint, even when removing it failed.
    Channels created before keys were unique keep their name (migration 0006)."""
    return f"{name}.{secrets.token_hex(6)}"


class Team(models.Model):
    """A team: the owner of channels and everything they hold; users hold roles in it."""

    name = models.CharField(max_length=63, unique=True, validators=[team_name_validator])
    description = models.TextField(blank=True, max_length=2000)
    created = models.DateTimeField(auto_now_add=True)

    # The team's policy, set by a site admin: what its channels may reach and how much they
    # may hold. An empty reach entry or quota means the site's default (its allow-lists from
    # the environment; no limit).
    reach = models.JSONField(
        default=dict,
        blank=True,
        help_text=(
            "What the team's channels may touch (console.services.team_policy): Kafka topic "
            "prefixes, files roots, HTTP and JDBC allow-lists; a key left out is the site's "
            "default."
        ),
    )
    max_channels = models.PositiveIntegerField(
        null=True, blank=True, help_text="Channels the team may hold; empty: no limit."
    )
    max_running_channels = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Channels the team may have running (or paused) at once; empty: no limit.",
    )
    max_realtime_cores = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Cores the team's real-time channels may hold at once; empty: no limit.",
    )
    max_driver_cores = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Cores of the team's drivers on one runtime worker; empty: no limit.",
    )
    max_driver_memory_mib = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Memory (MiB) of the team's drivers on one runtime worker; empty: no limit.",
    )

    class Meta:
        ordering = ["name"]
        permissions = [("manage_team", "Can manage a team's members")]

    def __str__(self) -> str:
        return self.name


def default_team_id() -> int:
    """The primary key of the ``default`` team, created when missing: the team of a channel
    saved without one (:meth:`Channel.save`; the API always names the team it chose)."""
    team, _ = Team.objects.get_or_create(name=DEFAULT_TEAM)
    return team.pk


class Membership(models.Model):
    """One role of one user in one team (a user may hold several roles in a team, as operator
    and editor do not include each other). ``source`` says who keeps the row: an admin
    (``local``) or the single sign-on's group rules (``sign-in``), which replace their own
    rows at each sign-in and never touch an admin's."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships"
    )
    role = models.CharField(max_length=16, choices=TeamRole.choices)
    source = models.CharField(
        max_length=16, choices=MembershipSource.choices, default=MembershipSource.LOCAL
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["team__name", "user__username", "role"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "user", "role"], name="console_membership_unique_role"
            ),
        ]
        indexes = [models.Index(fields=["user", "team"], name="console_membership_user")]

    def __str__(self) -> str:
        return f"{self.user} is {self.role} in {self.team}"


class ServiceAccount(models.Model):
    """A team's account for automation (a CI job, the CLI, Terraform): a token with one role in
    one team and an expiry, issued by a team admin, shown once, revocable
    (:mod:`console.services.service_accounts`). It acts through a user of its own that holds
    the role in the team (``user``; no password, never signs in to a page), so every check and
    audit row treats it as any member."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="service_accounts")
    name = models.CharField(max_length=63, validators=[team_name_validator])
    role = models.CharField(max_length=16, choices=TeamRole.choices)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="service_account"
    )
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    token_prefix = models.CharField(max_length=16, editable=False)
    expires_at = models.DateTimeField()
    created = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["team__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="console_service_account_name"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.role} in {self.team})"


class SignInGroupRule(models.Model):
    """A site admin's rule: a user whose single sign-on reports ``group`` holds ``role`` in
    ``team`` (:func:`console.services.teams.apply_sign_in_groups`, at every sign-in)."""

    group = models.CharField(
        max_length=SIGN_IN_GROUP_MAX_LENGTH,
        help_text="The group exactly as the identity provider's groups claim names it.",
    )
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="sign_in_rules")
    role = models.CharField(max_length=16, choices=TeamRole.choices)

    class Meta:
        ordering = ["group", "team__name", "role"]
        constraints = [
            models.UniqueConstraint(
                fields=["group", "team", "role"], name="console_signin_rule_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.group} → {self.role} in {self.team}"


class ChannelQuerySet(models.QuerySet):
    def with_summary(self) -> ChannelQuerySet:
        """Annotate ``latest_revision`` and ``latest_spec``; join connector and creator.

        One query for any number of channels, which is what list views need.
        """
        latest = Revision.objects.filter(channel=OuterRef("pk")).order_by("-number")
        # Correlated subqueries, not ``Max`` over a join: without GROUP BY the database reads
        # them only for the rows of the page (a first page of 10,000 channels stays fast).
        return self.select_related("connector__revision", "created_by", "team").annotate(
            latest_revision=Subquery(latest.values("number")[:1]),
            latest_spec=Subquery(latest.values("spec")[:1], output_field=models.JSONField()),
        )


class Channel(models.Model):
    """A named, versioned event channel: source → transforms → sink."""

    name = models.CharField(max_length=63, unique=True, validators=[channel_name_validator])
    team = models.ForeignKey(
        Team,
        on_delete=models.PROTECT,
        related_name="channels",
        help_text="The team the channel belongs to; left empty, the default team (save()).",
    )
    description = models.TextField(blank=True, max_length=DESCRIPTION_MAX_LENGTH)
    target_state = models.CharField(
        max_length=16, choices=TargetState.choices, default=TargetState.STOPPED
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # The restart policy: what the control loop does when the connector FAILS
    # (see console.selectors.restart_policy).
    restart_policy = models.CharField(
        max_length=16, choices=RestartPolicyType.choices, default=RestartPolicyType.ON_FAILURE
    )
    restart_max_attempts = models.PositiveIntegerField(
        default=5,
        validators=[MinValueValidator(1), MaxValueValidator(1000)],
        help_text="Automatic restarts before the control loop gives up (on-failure only).",
    )
    restart_backoff_initial_seconds = models.FloatField(
        default=1.0,
        validators=[MinValueValidator(0.1), MaxValueValidator(3600.0)],
        help_text="Wait after a failure before the first automatic restart; doubles each time.",
    )
    restart_backoff_max_seconds = models.FloatField(
        default=60.0,
        validators=[MinValueValidator(0.1), MaxValueValidator(86400.0)],
        help_text="The longest wait between a failure and its automatic restart.",
    )

    # HTTP ingestion (the ``http`` source): producers authenticate with a per-channel token
    # (stored as a hash; shown once when issued) and are held to a rate limit.
    ingest_token_hash = models.CharField(
        max_length=128,
        blank=True,
        editable=False,
        help_text="Hash of the channel's ingestion token; empty when none was issued.",
    )
    ingest_token_prefix = models.CharField(
        max_length=16,
        blank=True,
        editable=False,
        help_text="The token's first characters, to tell tokens apart (never the whole token).",
    )
    ingest_rate_limit = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Events per second accepted by HTTP ingestion; empty = SLUICE_INGEST_RATE_LIMIT.",
    )

    checkpoint_key = models.CharField(
        max_length=100,
        unique=True,
        blank=True,
        editable=False,
        help_text=(
            "The folder of the channel's checkpoint under the runtime's checkpoint root "
            "(SLUICE_CHECKPOINT_ROOT); removed with the channel."
        ),
    )

    labels = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_labels],
        help_text=(
            "Key/value labels (Kubernetes rules, see console.labels) to find and act on "
            "channels as a fleet: ?label=key=value on the list and the bulk endpoint."
        ),
    )

    realtime_cores = models.PositiveIntegerField(
        null=True,
        blank=True,
        editable=False,
        help_text=(
            "The cores a real-time channel holds against its team's quota while RUNNING or "
            "PAUSED (one per source partition), counted from Kafka when its revision was "
            "deployed (console.services.quotas); empty: not real-time, or not counted."
        ),
    )

    health_level = models.CharField(
        max_length=8,
        default="idle",
        editable=False,
        help_text=(
            "The health level (console.selectors.health.LEVELS) as of the control loop's last "
            "pass or the channel's last target change: what the fleet list filters and sorts by."
        ),
    )

    objects = ChannelQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        indexes = [
            models.Index(fields=["health_level", "name"], name="console_channel_health"),
            models.Index(fields=["updated"], name="console_channel_updated"),
            models.Index(fields=["created"], name="console_channel_created"),
            models.Index(fields=["target_state", "name"], name="console_channel_target"),
            models.Index(fields=["team", "name"], name="console_channel_team"),
        ]
        permissions = [
            (
                "operate_channel",
                "Can start, stop, pause, resume and restart channels and change their offsets",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def unique_error_message(self, model_class, unique_check):
        if tuple(unique_check) == ("name",):
            # The same words whoever holds the name: never which team, nor that it is another.
            return ValidationError(CHANNEL_NAME_TAKEN, code="unique")
        return super().unique_error_message(model_class, unique_check)

    def clean(self) -> None:
        if self.restart_backoff_max_seconds < self.restart_backoff_initial_seconds:
            raise ValidationError(
                {
                    "restart_backoff_max_seconds": (
                        "Must be at least the initial backoff "
                        f"({self.restart_backoff_initial_seconds:g} s)."
                    )
                }
            )

    def save(self, *args, **kwargs) -> None:
        if not self.checkpoint_key:  # set once, when the channel is created
            self.checkpoint_key = new_checkpoint_key(self.name)
        if not self.team_id:  # not a field default: it would query at every Channel()
            self.team_id = default_team_id()
        super().save(*args, **kwargs)

    def latest_revision_obj(self) -> Revision | None:
        """The newest saved revision (one query)."""
        return self.revisions.order_by("-number").first()

    @property
    def state(self) -> str:
        """Observed state: the connector's, or STOPPED when it was never deployed."""
        connector = getattr(self, "connector", None)
        return connector.state if connector is not None else ConnectorState.STOPPED


class Revision(models.Model):
    """An immutable saved version of a channel's spec (numbered 1, 2, … per channel)."""

    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    spec = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    class Meta:
        ordering = ["channel", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["channel", "number"], name="console_revision_unique_number"
            ),
            models.CheckConstraint(
                condition=models.Q(number__gte=1), name="console_revision_number_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.channel.name} r{self.number}"


class Worker(models.Model):
    """A runtime worker as the console last saw it."""

    worker_id = models.CharField(max_length=255, unique=True)
    host = models.CharField(max_length=255, blank=True)
    pid = models.PositiveIntegerField(null=True, blank=True)
    state = models.CharField(max_length=16, choices=WorkerState.choices, default=WorkerState.ALIVE)
    started_at = models.DateTimeField(null=True, blank=True)
    last_heartbeat = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When its last heartbeat was sent, by the worker host's clock (shown only: "
        "liveness never compares it with the console's clock).",
    )
    heartbeat_seen_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the control loop last saw a new heartbeat of it, by the console's clock "
        "(its liveness: DEAD after SLUICE_WORKER_SESSION_TIMEOUT without one); empty while the "
        "console could not read the runtime.",
    )
    service = models.CharField(
        max_length=16,
        choices=WorkerService.choices,
        default=WorkerService.IN_SERVICE,
        help_text=(
            "IN_SERVICE takes new channels; DRAINING gets none and hands its channels to "
            "other live workers; DRAINED has none left (console/services/workers.py)."
        ),
    )
    service_changed_at = models.DateTimeField(null=True, blank=True)
    service_changed_by = models.CharField(
        max_length=150, blank=True, help_text="Who drained it or put it back in service."
    )
    capacity = models.JSONField(
        default=dict,
        blank=True,
        help_text="Its capacity and load as its own record in the runtime's status topic last "
        "said (cores, cores held by real-time queries, connectors, available memory, owned "
        "slots); empty until it says (the runtime group places channels).",
    )

    class Meta:
        ordering = ["worker_id"]
        permissions = [
            ("operate_worker", "Can drain, return to service and forget runtime workers")
        ]

    @property
    def in_service(self) -> bool:
        """Whether it is in service (the operator's side of whether it takes channels)."""
        return self.service == WorkerService.IN_SERVICE

    @property
    def schedulable(self) -> bool:
        """Whether the control loop may place channels on it (alive and in service)."""
        return self.state == WorkerState.ALIVE and self.in_service

    def __str__(self) -> str:
        return self.worker_id


class Connector(models.Model):
    """The physical side of a channel: one deployed revision on the runtime.

    ``worker`` is the console's placement decision (the runtime worker it assigned
    the connector to); ``state``, ``trace``, ``driver_id``, ``status_reason`` and
    ``finished`` are what the runtime last reported.
    """

    channel = models.OneToOneField(Channel, on_delete=models.CASCADE, related_name="connector")
    runtime_id = models.CharField(max_length=63, unique=True)
    revision = models.ForeignKey(
        Revision, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    state = models.CharField(
        max_length=16, choices=ConnectorState.choices, default=ConnectorState.UNASSIGNED
    )
    worker = models.ForeignKey(
        Worker,
        to_field="worker_id",
        db_column="worker_id",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="connectors",
    )
    generation = models.PositiveIntegerField(default=0)
    slot = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="The runtime slot the console placed the connector in when the group "
        "places channels (capacity); empty: its home slot, from its id.",
    )
    move = models.JSONField(
        null=True,
        blank=True,
        help_text="A move to another runtime slot under way (capacity-aware placement): "
        "where to, for how many cores, since when and its phase; empty: none.",
    )
    trace = models.TextField(blank=True)
    driver_id = models.CharField(
        max_length=255,
        blank=True,
        help_text="The Spark driver the runtime last reported running the connector's query "
        "(a shared driver hosts many connectors); empty when none.",
    )
    status_reason = models.TextField(
        blank=True,
        help_text="Why the connector is in its state, as the runtime last said when the state "
        "alone does not (a source topic waited for, no core free for a real-time query).",
    )
    stage_metrics = models.JSONField(
        default=list,
        blank=True,
        help_text="Per-stage event counts since the channel was first started (the runtime's "
        "last report plus what earlier drivers counted): "
        '[{"stage": "source", "index": null, "type": ..., "in": n, "out": n, "failed": n}, ...].',
    )
    rule_metrics = models.JSONField(
        default=list,
        blank=True,
        help_text="A bus's per-rule counts since the channel was first started, rates as the "
        "runtime last reported them (empty for a linear "
        'channel): [{"rule": name, "matched": n, "delivered": n, "failed": n, '
        '"matched_per_second": x, "delivered_per_second": x, "targets": [...]}, ...].',
    )
    run_dead_letters = models.PositiveBigIntegerField(
        default=0,
        help_text="Dead letters the channel's replays and redrives made (their events that "
        "failed), counted by their own connectors: the channel's count is dead_letters plus "
        "these (console.services.run_executor.count_run_dead_letters).",
    )
    count_base = models.JSONField(
        default=dict,
        blank=True,
        help_text="What earlier drivers counted, per stage and rule, and the current driver's "
        "last report (console.services.count_totals): stage_metrics and rule_metrics are "
        "their sum, the counts since the channel was first started.",
    )
    batch_seconds = models.FloatField(
        null=True,
        blank=True,
        help_text="How long the connector's latest micro-batch took (seconds), as the runtime "
        "last reported; null until a batch ran.",
    )
    dead_letters = models.BigIntegerField(
        default=0, help_text="Events the runtime sent to the dead-letter target (or skipped)."
    )

    @property
    def all_dead_letters(self) -> int:
        """Its drivers' dead letters and its runs': what its dead-letter list holds."""
        return int(self.dead_letters) + int(self.run_dead_letters)

    sink_retries = models.BigIntegerField(
        default=0,
        help_text="Sink writes the runtime retried under a sink's retry policy.",
    )
    finished = models.BooleanField(
        default=False,
        help_text="An available-now run reached the end of its source and stopped by itself "
        "(as the runtime last said); starting the channel runs it again.",
    )
    state_changed_at = models.DateTimeField(null=True, blank=True)
    last_status_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the runtime wrote its latest status report (the reporting host's clock: "
        "shown, never compared with the console's).",
    )
    status_seen_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the control loop first read the latest status report (the console's "
        "clock): the report's date as far as liveness is concerned.",
    )
    report_interval = models.FloatField(
        default=0.0,
        help_text="The latest report's promise: its reporter rewrites it at least this often "
        "(seconds; 0: no promise).",
    )
    status_deadline_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="status_seen_at + 2 x report_interval while the state is one its reporter keeps "
        "refreshing (console.selectors.reporting); null otherwise. Past it the connector is shown "
        "NOT_REPORTING.",
    )
    silence_recorded = models.BooleanField(
        default=False,
        help_text="Whether the control loop last recorded the connector as NOT_REPORTING (a "
        "lifecycle event each way); what readers show is judged afresh, not read from here.",
    )
    restart_attempts = models.PositiveIntegerField(
        default=0,
        help_text=(
            "Automatic restarts since the connector last ran healthy (or a user started, "
            "stopped or restarted it)."
        ),
    )

    class Meta:
        ordering = ["runtime_id"]
        indexes = [
            models.Index(fields=["state"], name="console_connector_state"),
            # Partial: the few connectors placed away from their home slot, or moving, are
            # read every pass (console/services/moves.py) without scanning the rest.
            models.Index(
                fields=["runtime_id", "slot"],
                name="console_connector_placed",
                condition=models.Q(slot__isnull=False),
            ),
            models.Index(
                fields=["id"],
                name="console_connector_moving",
                condition=models.Q(move__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return self.runtime_id


class Task(models.Model):
    """One unit of a connector's parallel work (one source partition)."""

    connector = models.ForeignKey(Connector, on_delete=models.CASCADE, related_name="tasks")
    task_id = models.PositiveIntegerField()
    state = models.CharField(
        max_length=16, choices=ConnectorState.choices, default=ConnectorState.UNASSIGNED
    )
    worker_id = models.CharField(max_length=255, null=True, blank=True)
    topic = models.CharField(max_length=255, null=True, blank=True)
    partition = models.IntegerField(null=True, blank=True)
    offset = models.BigIntegerField(null=True, blank=True)
    end_offset = models.BigIntegerField(null=True, blank=True)
    lag = models.BigIntegerField(null=True, blank=True)
    rows_per_second = models.FloatField(null=True, blank=True)
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["connector", "task_id"]
        constraints = [
            models.UniqueConstraint(fields=["connector", "task_id"], name="console_task_unique_id"),
        ]

    def __str__(self) -> str:
        return f"{self.connector.runtime_id}/{self.task_id}"


class LifecycleEvent(models.Model):
    """One recorded transition or decision: who or what, from, to, when and why.

    ``channel`` is kept (and later nulled, not deleted) so the history of a deleted
    channel survives; ``subject_id`` names the subject on its own.
    """

    channel = models.ForeignKey(
        Channel,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="lifecycle_events",
    )
    subject_type = models.CharField(max_length=16, choices=SubjectType.choices)
    subject_id = models.CharField(max_length=255)
    from_state = models.CharField(max_length=16, blank=True)
    to_state = models.CharField(max_length=16, blank=True)
    actor = models.CharField(max_length=150)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["channel", "-created_at"], name="console_event_channel_time"),
            models.Index(fields=["-created_at"], name="console_event_time"),
        ]

    def __str__(self) -> str:
        return f"{self.subject_type} {self.subject_id}: {self.from_state or '∅'} → {self.to_state}"


class AuditEvent(models.Model):
    """One change or operation someone made: who, what, when, from where, and the outcome.

    Written for every state-changing request (API and admin), successful or refused, so an
    operator can answer "who stopped this channel?". Rows are never updated; ``actor`` keeps
    the username after the user is deleted. ``changes`` holds the request's redacted body
    (secrets replaced by the marker), never a secret.
    """

    created_at = models.DateTimeField(default=timezone.now)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    actor = models.CharField(max_length=150)
    action = models.CharField(max_length=64)
    object_type = models.CharField(max_length=32, blank=True)
    object_id = models.CharField(max_length=255, blank=True)
    changes = models.JSONField(default=dict, blank=True)
    outcome = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="The HTTP status the request was answered with."
    )
    remote_addr = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=512, blank=True)
    via = models.CharField(max_length=16, blank=True, help_text="api, admin, ingest or cli.")
    team = models.ForeignKey(
        Team,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=(
            "The team of the object (a channel's) when the event was recorded; empty for what "
            "belongs to no team (a sign-in, a runtime worker): those rows only site admins see, "
            "and each user their own."
        ),
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["team", "-created_at"], name="console_audit_team"),
            models.Index(fields=["-created_at"], name="console_audit_time"),
            models.Index(
                fields=["object_type", "object_id", "-created_at"], name="console_audit_object"
            ),
            models.Index(fields=["actor", "-created_at"], name="console_audit_actor"),
        ]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action} {self.object_id}"


# -- single sign-on (console/oidc.py, console/services/sign_on.py) --------------------------------


class SignOnIdentity(models.Model):
    """A user's identity at an OpenID Connect provider: its issuer and the subject (``sub``)
    that provider gave them, which never changes and is never reused.

    A single sign-on finds its user by this link only, never by user name or e-mail, so an
    account at the provider cannot take over a local account that happens to share its name.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sign_on_identities"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(default=timezone.now)
    last_sign_in_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["issuer", "subject"], name="console_sign_on_identity_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


# -- the schema registry (console/schemas, console/services/schemas.py) -------------------------


class RegistrySchema(models.Model):
    """One schema text with its global id (the primary key), as Confluent Schema Registry:
    the same canonical text, type and references in any subject have one id, kept for good
    (old messages carry it) even when every version using it is deleted. A team finds an id
    in its registry once it has registered the text (``teams``), never another team's."""

    schema_type = models.CharField(max_length=16)
    schema = models.TextField(help_text="The canonical text (console/schemas).")
    references = models.JSONField(default=list, blank=True)
    fingerprint = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    teams = models.ManyToManyField(
        Team,
        related_name="+",
        blank=True,
        help_text=(
            "The teams that registered it: its id is found in their registries only, for good "
            "(as its text: old messages carry the id)."
        ),
    )

    class Meta:
        verbose_name = "registry schema"

    def __str__(self) -> str:
        return f"schema {self.pk} ({self.schema_type})"


class Subject(models.Model):
    """A subject of one team: the versions of one schema as it evolves, with its own
    compatibility level (``""``: the registry's global one, :class:`RegistryConfig`). Its
    name is unique in its team; another team may have a subject of the same name (each team
    has its own registry, ``/schema-registry/teams/<team>/``)."""

    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="subjects")
    name = models.CharField(max_length=255)
    compatibility = models.CharField(max_length=24, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["team__name", "name"]
        permissions = [("change_registry_config", "Can set schema compatibility levels")]
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="console_subject_team_name")
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs) -> None:
        if not self.team_id:  # as a channel: the default team when nothing names another
            self.team_id = default_team_id()
        super().save(*args, **kwargs)


class SubjectVersion(models.Model):
    """Version ``version`` of a subject. Soft-deleted versions (``deleted``) are hidden but
    keep their number; a permanent delete removes the row."""

    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    schema = models.ForeignKey(RegistrySchema, on_delete=models.PROTECT, related_name="+")
    deleted = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["subject", "version"]
        constraints = [
            models.UniqueConstraint(fields=["subject", "version"], name="console_subject_version")
        ]

    def __str__(self) -> str:
        return f"{self.subject.name} v{self.version}"


class RegistryConfig(models.Model):
    """The registry's global settings: one row (pk 1), created on first use."""

    compatibility = models.CharField(max_length=24, default="BACKWARD")

    def __str__(self) -> str:
        return f"global compatibility {self.compatibility}"


class ChannelRun(models.Model):
    """A bounded run of a channel's CURRENT spec beside its live connector: a replay of a
    time window (or explicit offsets) of its Kafka source or ingest topic, or a redrive of
    dead letters' original records from ``sluice-redrive.<channel>``. It reads with its own
    checkpoint and consumer identity, never the live query's (docs/runtime.md, "Replays and
    redrives")."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="runs")
    kind = models.CharField(max_length=8, choices=RunKind.choices, default=RunKind.REPLAY)
    state = models.CharField(max_length=10, choices=RunState.choices, default=RunState.PENDING)
    revision = models.ForeignKey(
        Revision, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    topic = models.CharField(
        max_length=255, blank=True, help_text="A redrive's topic; empty for a replay."
    )
    window_start = models.DateTimeField(null=True, blank=True)
    window_end = models.DateTimeField(null=True, blank=True)
    start_offsets = models.JSONField(
        default=dict, blank=True, help_text="{topic: {partition: first offset}}, inclusive."
    )
    end_offsets = models.JSONField(
        default=dict, blank=True, help_text="{topic: {partition: end offset}}, exclusive."
    )
    expected = models.BigIntegerField(null=True, blank=True)
    events_read = models.BigIntegerField(default=0)
    events_written = models.BigIntegerField(default=0)
    events_failed = models.BigIntegerField(
        default=0,
        help_text=(
            "Events that failed again on their way through and went to the dead letters "
            "(a run with any is FAILED: it did not do all it was asked)."
        ),
    )
    targets = models.JSONField(
        default=list,
        blank=True,
        help_text="The targets it writes into, as its confirmation named them (RunTarget).",
    )
    dead_letter_ids = models.JSONField(
        default=list, blank=True, help_text="A redrive's dead letters (their ids)."
    )
    created_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    runtime_id = models.CharField(
        max_length=120,
        blank=True,
        help_text=(
            "The run's connector in the runtime while it exists there ('' before it is "
            "deployed and once removed)."
        ),
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["channel", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.id} of {self.channel_id} ({self.state})"

    @property
    def progress(self) -> float:
        """Events read over the events expected, 0..1 (1 once SUCCEEDED)."""
        if self.state == RunState.SUCCEEDED:
            return 1.0
        if not self.expected:
            return 0.0
        return max(0.0, min(1.0, self.events_read / self.expected))


class ChannelDiscovery(models.Model):
    """Schema discovery of a channel (:mod:`console.services.discovery`): whether it is on,
    and what the samples of its live events showed so far.

    ``schema`` is the merged JSON Schema of the events (without ``$schema``); ``fields`` maps
    each field's dotted path to ``{"types": [...], "first_seen": ISO time}``. Each change of
    shape is registered as a new version of the subject ``<channel>-discovered``
    (``version``, 0 before the first)."""

    channel = models.OneToOneField(Channel, on_delete=models.CASCADE, related_name="discovery")
    enabled = models.BooleanField(default=False)
    schema = models.JSONField(default=dict, blank=True)
    fields = models.JSONField(default=dict, blank=True)
    samples = models.BigIntegerField(default=0, help_text="Events sampled so far.")
    version = models.PositiveIntegerField(default=0)
    last_sample_at = models.DateTimeField(null=True, blank=True)
    changed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"discovery of {self.channel_id} ({'on' if self.enabled else 'off'})"


class LoopFence(models.Model):
    """The fencing token of a periodic loop's last writer (:mod:`console.locks`): a pass of
    the loop writes only if no pass with a newer token has written, so a pass that outlived
    its lock (a stall, a long GC) never overwrites a newer pass's results."""

    name = models.CharField(max_length=63, unique=True)
    token = models.BigIntegerField(default=0)
    written_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name}: token {self.token}"


class LoopCursor(models.Model):
    """Where a loop that follows a feed is to read next (the control loop's place in the
    runtime's status topic: partition → next offset), saved with the pass that read up to
    it, so a pass that is not saved is read again."""

    name = models.CharField(max_length=63, unique=True)
    position = models.JSONField(default=dict)
    written_at = models.DateTimeField(null=True, blank=True)
    resync_slice = models.PositiveIntegerField(
        default=0,
        help_text="The slice of the connectors (by id) the next pass looks at whatever the feed "
        "says: a rolling resync, every connector once in so many passes.",
    )

    def __str__(self) -> str:
        return f"{self.name}: {len(self.position)} partitions"
