"""Kafka Connect's REST API over channels, under ``/connect/`` (docs/connect-rest.md).

A channel is a connector, its tasks the connector's tasks; states are already Connect's but
one: a connector whose reports stopped (NOT_REPORTING in the console's API,
:mod:`console.selectors.reporting`) reads ``UNASSIGNED`` here, connector and tasks, with a
``trace`` saying "not reporting since …". Connect clients know only Connect's states, and
UNASSIGNED is what Connect itself shows when the worker that ran a connector is gone from its
group: not running as far as anyone can tell, not known to have failed. FAILED would be a
claim we cannot make (and invites a client's automatic restart of a query that may well be
running); RUNNING is the lie this state exists to avoid.
Shapes and codes are Connect's, errors ``{"error_code": N, "message": "…"}``. Reads go
through :mod:`console.selectors`, changes through :mod:`console.services` (which audit and
record lifecycle events), behind the same authentication and roles as ``/api/v1/``; Connect
clients usually send HTTP basic authentication, so that is accepted here too.
"""

from __future__ import annotations

import json
from typing import Any, cast

from django.conf import settings
from django.contrib.auth.models import User
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.authentication import (
    BasicAuthentication,
    SessionAuthentication,
    TokenAuthentication,
)
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console import permissions, services
from console.api.channels.serializers.channel import ChannelSerializer
from console.api.exceptions import exception_handler as console_exception_handler
from console.api.exceptions import flatten_errors
from console.api.parsers import StrictJSONError, loads_strict
from console.api.scoping import creation_team, team_channels
from console.api.teams.authentication import ServiceAccountAuthentication
from console.choices import ConnectorState
from console.errors import QuotaExceeded
from console.models import Channel
from console.selectors import channels as selectors
from console.selectors import reporting
from console.selectors.specs import redact_spec
from console.services.channels import UNCHANGED
from runtime_adapter.base import SourceOffset

#: The config key that carries the channel's whole spec (JSON text), in and out.
SPEC_KEY = "sluice.spec"
#: The config key naming the channel's team (read when a connector is created; then fixed).
TEAM_KEY = "sluice.team"
CONNECTOR_CLASS = "io.sluice.connect.Channel"
VERSION = "0.1.0"


class ConnectError(APIException):
    status_code: int = status.HTTP_400_BAD_REQUEST


def _error(code: int, message: str) -> ConnectError:
    exc = ConnectError(message)
    exc.status_code = code
    return exc


def connect_exception_handler(exc: Exception, context: dict) -> Response | None:
    """The console's handler, reshaped into Connect's ``{"error_code", "message"}``."""
    if isinstance(exc, Http404):
        name = context["kwargs"].get("name", "")
        return Response({"error_code": 404, "message": f"Connector {name} not found"}, status=404)
    response = console_exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    if isinstance(exc, ConnectError):
        message = str(exc.detail)
    elif isinstance(data, dict) and (set(data) == {"detail"} or isinstance(exc, QuotaExceeded)):
        message = str(data["detail"])
    elif isinstance(data, dict):
        message = "; ".join(
            f"{path}: {' '.join(msgs)}" for path, msgs in flatten_errors(data).items()
        )
    else:
        message = str(data)
    response.data = {"error_code": response.status_code, "message": message}
    return response


class ConnectView(APIView):
    authentication_classes = [
        TokenAuthentication,
        BasicAuthentication,
        SessionAuthentication,
        ServiceAccountAuthentication,
    ]
    required_permissions: dict[str, permissions.Need] = {}

    def get_exception_handler(self):
        return connect_exception_handler

    def channel(self, name: str) -> Channel:
        """The connector ``name`` among the caller's teams' channels (404 otherwise), once
        their role in its team allows the request (403 otherwise)."""
        found = team_channels(self.request, selectors.channels_with_status()).filter(name=name)
        channel = found.first()
        if channel is None:
            raise Http404
        self.check_object_permissions(self.request, channel)
        return channel


# -- shapes --------------------------------------------------------------------------------------


def _spec(channel: Channel) -> dict[str, Any]:
    revision = channel.latest_revision_obj()
    return dict(revision.spec) if revision is not None else {}


def _topics_of(spec: dict[str, Any]) -> list[str]:
    source = spec.get("source", {})
    if source.get("type") == "kafka":
        return list(source.get("config", {}).get("topics") or [])
    return []


def _type(spec: dict[str, Any]) -> str:
    """Connect has source and sink connectors; a channel reading Kafka is a sink connector
    (it consumes topics), any other a source connector (it produces into its sinks)."""
    return "sink" if spec.get("source", {}).get("type") == "kafka" else "source"


def connector_config(channel: Channel) -> dict[str, str]:
    spec = redact_spec(_spec(channel))
    sinks = spec.get("sinks") or ([spec["sink"]] if spec.get("sink") else [])
    config = {
        "name": channel.name,
        "connector.class": CONNECTOR_CLASS,
        "tasks.max": str(max(1, _tasks(channel).__len__())),
        "sluice.source.type": str(spec.get("source", {}).get("type", "")),
        "sluice.transforms": ",".join(str(t.get("type")) for t in spec.get("transforms", [])),
        "sluice.sink.type": ",".join(str(s.get("type")) for s in sinks if isinstance(s, dict)),
        "sluice.description": channel.description,
        TEAM_KEY: channel.team.name,
        SPEC_KEY: json.dumps(spec, sort_keys=True),
    }
    topics = _topics_of(spec)
    if topics:
        config["topics"] = ",".join(topics)
    pattern = spec.get("source", {}).get("config", {}).get("topic_pattern")
    if pattern:
        config["topics.regex"] = str(pattern)
    if spec.get("rules"):
        config["sluice.rules"] = ",".join(str(r.get("name")) for r in spec["rules"])
    return config


def _tasks(channel: Channel) -> list[Any]:
    connector = getattr(channel, "connector", None)
    return list(connector.tasks.order_by("task_id")) if connector is not None else []


def _worker(channel: Channel) -> str:
    connector = getattr(channel, "connector", None)
    return (connector.worker_id or "") if connector is not None else ""


def connector_status(channel: Channel) -> dict[str, Any]:
    connector = getattr(channel, "connector", None)
    silence = reporting.of_connector(connector)
    conn: dict[str, Any] = {"state": channel.state, "worker_id": _worker(channel)}
    if not silence.reporting:
        conn = {**conn, "state": ConnectorState.UNASSIGNED.value, "trace": silence.reason}
    elif connector is not None and connector.trace and channel.state == "FAILED":
        conn["trace"] = connector.trace
    return {
        "name": channel.name,
        "connector": conn,
        "tasks": [task_status(channel, task, silence) for task in _tasks(channel)],
        "type": _type(_spec(channel)),
    }


def task_status(
    channel: Channel, task: Any, silence: reporting.Reporting | None = None
) -> dict[str, Any]:
    """A task's status; its connector's ``silence`` (judged once for all its tasks) makes a
    state its reporter keeps refreshing UNASSIGNED, with the reason as its trace."""
    connector = getattr(channel, "connector", None)
    silence = reporting.of_connector(connector) if silence is None else silence
    body = {"id": task.task_id, "state": task.state, "worker_id": task.worker_id or ""}
    if not silence.reporting and task.state in reporting.REFRESHED_STATES:
        body.update(state=ConnectorState.UNASSIGNED.value, trace=silence.reason)
    elif task.state == "FAILED" and connector is not None and connector.trace:
        body["trace"] = connector.trace
    return body


def connector_info(channel: Channel) -> dict[str, Any]:
    return {
        "name": channel.name,
        "config": connector_config(channel),
        "tasks": [{"connector": channel.name, "task": t.task_id} for t in _tasks(channel)],
        "type": _type(_spec(channel)),
    }


# -- views ---------------------------------------------------------------------------------------

SEE = permissions.seeing()


@extend_schema(exclude=True)
class RootView(ConnectView):
    required_permissions = {"get": SEE}

    def get(self, request: Request) -> Response:
        return Response(
            {
                "version": VERSION,
                "commit": getattr(settings, "SLUICE_COMMIT", "") or "sluice",
                "kafka_cluster_id": getattr(settings, "SLUICE_CLUSTER_ID", "") or "sluice",
            }
        )


@extend_schema(exclude=True)
class ConnectorsView(ConnectView):
    required_permissions = {"get": SEE, "post": permissions.CREATE}

    def get(self, request: Request) -> Response:
        expand = request.query_params.getlist("expand")
        unknown = set(expand) - {"status", "info"}
        if unknown:
            raise _error(400, f"Unknown expand value(s): {', '.join(sorted(unknown))}")
        queryset = team_channels(request, selectors.channels_with_status()).order_by("name")
        if not expand:
            return Response([c.name for c in queryset])
        body: dict[str, Any] = {}
        for channel in queryset:
            item: dict[str, Any] = {}
            if "status" in expand:
                item["status"] = connector_status(channel)
            if "info" in expand:
                item["info"] = connector_info(channel)
            body[channel.name] = item
        return Response(body)

    def post(self, request: Request) -> Response:
        data = request.data if isinstance(request.data, dict) else {}
        name = data.get("name")
        config = data.get("config")
        if not isinstance(name, str) or not name or not isinstance(config, dict):
            raise _error(400, "Connector config must have a name and a config object")
        if Channel.objects.filter(name=name).exists():
            raise _error(409, f"Connector {name} already exists")
        channel = _save(None, name, config, cast(User, request.user), request)
        fresh = self.channel(channel.name)
        return Response(connector_info(fresh), status=status.HTTP_201_CREATED)


def _spec_from_config(name: str, config: dict[str, Any]) -> Any:
    raw = config.get(SPEC_KEY)
    if raw is None:
        raise _error(
            400,
            f"Connector configuration is invalid: a Sluice channel is built from its spec; "
            f"put it (JSON) under {SPEC_KEY!r}",
        )
    if isinstance(raw, str):
        # The API's limits for a JSON body hold for a spec sent as a string too: its depth,
        # repeated keys, strict numbers and storable strings (loads_strict).
        try:
            return loads_strict(raw)
        except StrictJSONError as exc:
            raise _error(400, f"{SPEC_KEY} is not valid: {exc}") from exc
    return raw


def _save(
    channel: Channel | None, name: str, config: dict[str, Any], user: User, request: Request
) -> Channel:
    spec = _spec_from_config(name, config)
    body: dict[str, Any] = {"name": name, "spec": spec}
    if "sluice.description" in config:
        body["description"] = config["sluice.description"]
    serializer = ChannelSerializer(channel, data=body, partial=channel is not None)
    serializer.is_valid(raise_exception=True)
    data = serializer.validated_data
    if channel is None:
        data.pop("team", None)
        team = creation_team(request, config.get(TEAM_KEY), permissions.CREATE)
        return services.create_channel(**data, team=team, user=user)
    services.update_channel(
        channel,
        spec=data.get("spec"),
        description=data.get("description"),
        restart_policy=None,
        ingest_rate_limit=UNCHANGED,
        user=user,
    )
    return channel


@extend_schema(exclude=True)
class ConnectorView(ConnectView):
    required_permissions = {"get": SEE, "delete": permissions.DELETE}

    def get(self, request: Request, name: str) -> Response:
        return Response(connector_info(self.channel(name)))

    def delete(self, request: Request, name: str) -> Response:
        services.delete_channel(self.channel(name), user=cast(User, request.user))
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(exclude=True)
class ConfigView(ConnectView):
    required_permissions = {"get": SEE, "put": permissions.CHANGE}

    def get(self, request: Request, name: str) -> Response:
        return Response(connector_config(self.channel(name)))

    def put(self, request: Request, name: str) -> Response:
        config = request.data if isinstance(request.data, dict) else None
        if config is None:
            raise _error(400, "The config must be a JSON object")
        if config.get("name", name) != name:
            raise _error(400, "Connector name configuration (name) must match the URL")
        existing = team_channels(request).filter(name=name).first()
        user = cast(User, request.user)
        if existing is None:
            if not user.has_perm(permissions.ADD_CHANNEL):
                raise _error(403, permissions.denial(permissions.ADD_CHANNEL, "create channels"))
            _save(None, name, config, user, request)
            return Response(connector_info(self.channel(name)), status=status.HTTP_201_CREATED)
        self.check_object_permissions(request, existing)
        _save(existing, name, config, user, request)
        return Response(connector_info(self.channel(name)))


@extend_schema(exclude=True)
class StatusView(ConnectView):
    required_permissions = {"get": SEE}

    def get(self, request: Request, name: str) -> Response:
        return Response(connector_status(self.channel(name)))


@extend_schema(exclude=True)
class TasksView(ConnectView):
    required_permissions = {"get": SEE}

    def get(self, request: Request, name: str) -> Response:
        channel = self.channel(name)
        config = connector_config(channel)
        return Response(
            [
                {"id": {"connector": name, "task": t.task_id}, "config": config}
                for t in _tasks(channel)
            ]
        )


@extend_schema(exclude=True)
class TaskStatusView(ConnectView):
    required_permissions = {"get": SEE}

    def get(self, request: Request, name: str, task: int) -> Response:
        channel = self.channel(name)
        for found in _tasks(channel):
            if found.task_id == task:
                return Response(task_status(channel, found))
        raise _error(404, f"Unknown task {name}-{task}")


@extend_schema(exclude=True)
class TopicsView(ConnectView):
    required_permissions = {"get": SEE}

    def get(self, request: Request, name: str) -> Response:
        channel = self.channel(name)
        topics = set(_topics_of(_spec(channel)))
        topics |= {t.topic for t in _tasks(channel) if t.topic}
        return Response({name: {"topics": sorted(topics)}})


@extend_schema(exclude=True)
class LifecycleView(ConnectView):
    """``PUT pause|resume|stop``: 202 without a body, as Connect answers."""

    operation = ""
    required_permissions = {"put": permissions.OPERATE["pause"]}

    def put(self, request: Request, name: str) -> Response:
        channel = self.channel(name)
        user = cast(User, request.user)
        if self.operation == "pause":
            services.pause_channel(channel, user=user)
        elif self.operation == "resume":
            if channel.target_state == "STOPPED":
                services.start_channel(channel, user=user)  # Connect's resume of a STOPPED one
            else:
                services.resume_channel(channel, user=user)
        else:
            services.stop_channel(channel, user=user)
        return Response(status=status.HTTP_202_ACCEPTED)


def _flag(request: Request, key: str) -> bool:
    value = request.query_params.get(key, "false").lower()
    if value not in ("true", "false"):
        raise _error(400, f"{key} must be true or false")
    return value == "true"


@extend_schema(exclude=True)
class RestartView(ConnectView):
    required_permissions = {"post": permissions.OPERATE["restart"]}

    def post(self, request: Request, name: str) -> Response:
        channel = self.channel(name)
        plan = services.restart_channel(
            channel,
            include_tasks=_flag(request, "includeTasks"),
            only_failed=_flag(request, "onlyFailed"),
            user=cast(User, request.user),
        )
        body = {
            "name": plan.name,
            "connector": {"state": plan.connector_state, "worker_id": plan.worker_id or ""},
            "tasks": [
                {"id": t.id, "state": t.state, "worker_id": t.worker_id or ""} for t in plan.tasks
            ],
            "type": _type(_spec(channel)),
        }
        return Response(body, status=status.HTTP_202_ACCEPTED)


@extend_schema(exclude=True)
class OffsetsView(ConnectView):
    required_permissions = {
        "get": SEE,
        "patch": permissions.ALTER_OFFSETS,
        "delete": permissions.ALTER_OFFSETS,
    }

    def get(self, request: Request, name: str) -> Response:
        found = services.channel_offsets(self.channel(name))
        return Response(
            {
                "offsets": [
                    {
                        "partition": {"kafka_topic": o.topic, "kafka_partition": o.partition},
                        "offset": {"kafka_offset": o.offset},
                    }
                    for o in found.offsets
                ]
            }
        )

    def patch(self, request: Request, name: str) -> Response:
        channel = self.channel(name)
        items = request.data.get("offsets") if isinstance(request.data, dict) else None
        if not isinstance(items, list) or not items:
            raise _error(400, "The request body must have a non-empty list 'offsets'")
        offsets = []
        for index, item in enumerate(items):
            try:
                partition, offset = item["partition"], item["offset"]
                topic = partition["kafka_topic"]
                number = partition["kafka_partition"]
                if offset is None:
                    raise _error(
                        400, "Resetting single partitions (a null offset) is not supported"
                    )
                value = offset["kafka_offset"]
            except (KeyError, TypeError) as exc:
                raise _error(
                    400,
                    f"offsets[{index}] must be {{'partition': {{'kafka_topic', "
                    f"'kafka_partition'}}, 'offset': {{'kafka_offset'}}}}",
                ) from exc
            if not (
                isinstance(topic, str)
                and isinstance(number, int)
                and isinstance(value, int)
                and number >= 0
                and value >= 0
            ):
                raise ValidationError({f"offsets[{index}]": ["bad topic, partition or offset"]})
            offsets.append(SourceOffset(topic, number, value))
        message = services.alter_channel_offsets(
            channel, offsets=offsets, user=cast(User, request.user)
        )
        return Response({"message": message})

    def delete(self, request: Request, name: str) -> Response:
        message = services.reset_channel_offsets(self.channel(name), user=cast(User, request.user))
        return Response({"message": message})


@extend_schema(exclude=True)
class TaskRestartView(ConnectView):
    """``POST tasks/{id}/restart``: a channel's tasks share one driver, so restarting one
    restarts the connector with all its tasks (as ``restart?includeTasks=true``); 204."""

    required_permissions = {"post": permissions.OPERATE["restart"]}

    def post(self, request: Request, name: str, task: int) -> Response:
        channel = self.channel(name)
        if task not in {t.task_id for t in _tasks(channel)}:
            raise _error(404, f"Unknown task {name}-{task}")
        services.restart_channel(channel, include_tasks=True, user=cast(User, request.user))
        return Response(status=status.HTTP_204_NO_CONTENT)
