"""OpenAPI parameters and answers of the plugin operations."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
)

from console.api.plugins.serializers import (
    PluginConfigInvalidSerializer,
    PluginConfigValidSerializer,
    PluginKindErrorSerializer,
)
from console.api.responses import ErrorDetailSerializer
from console.choices import PluginKind

KIND_PATH = OpenApiParameter(
    "kind", str, OpenApiParameter.PATH, enum=PluginKind.values, description="The plugin's kind."
)
TYPE_PATH = OpenApiParameter(
    "type", str, OpenApiParameter.PATH, description="The plugin's type, e.g. kafka or filter."
)
KIND_QUERY = OpenApiParameter(
    "kind",
    str,
    OpenApiParameter.QUERY,
    enum=PluginKind.values,
    description="The plugin's kind; needed when the type names plugins of several kinds.",
)
INVALID_STATUS_QUERY = OpenApiParameter(
    "invalid_status",
    int,
    OpenApiParameter.QUERY,
    enum=[400, 200],
    default=400,
    description=(
        "The status of the answer when the config is not valid (its body is the same): 400, "
        "the default, or 200 for a client that checks as the user types, to which a config "
        "not valid yet is an answer, not a failed request (a browser logs every 400 as an "
        "error). The console's builder asks with 200."
    ),
)
TEAM_QUERY = OpenApiParameter(
    "team",
    str,
    OpenApiParameter.QUERY,
    description=(
        "Check the config within this team's reach (the topics, files and hosts its channels "
        "may touch), as saving a channel of the team does; left out: the site's defaults."
    ),
)
NO_PLUGIN = OpenApiResponse(ErrorDetailSerializer, description="No plugin has this kind and type.")
CONFIG_VALID = OpenApiResponse(
    response=PluginConfigValidSerializer,
    description="The config is valid; here it is normalised, with its secrets redacted.",
    examples=[
        OpenApiExample(
            "Valid Kafka source config",
            value={
                "valid": True,
                "config": {
                    "bootstrap_servers": "localhost:9092",
                    "topics": ["orders"],
                    "starting_offsets": "latest",
                    "format": "json",
                },
            },
        )
    ],
)
CONFIG_INVALID = OpenApiResponse(
    response=PluginConfigInvalidSerializer,
    description=(
        "The config (or the request) is not valid: messages keyed by the path of each bad "
        "field, in the style of spec validation."
    ),
    examples=[
        OpenApiExample(
            "Invalid Kafka source config",
            value={
                "valid": False,
                "errors": {
                    "config.topics": ["field required"],
                    "config.starting_offsets": ["must be 'earliest' or 'latest'"],
                },
            },
        )
    ],
)
CONFIG_VERDICT = OpenApiResponse(
    response=PolymorphicProxySerializer(
        component_name="PluginConfigVerdict",
        serializers=[PluginConfigValidSerializer, PluginConfigInvalidSerializer],
        resource_type_field_name=None,
    ),
    description=(
        "The config is valid (normalised, secrets redacted), or, with ?invalid_status=200, "
        "not valid: `valid` says which."
    ),
    examples=[*CONFIG_VALID.examples, *CONFIG_INVALID.examples],
)
KIND_NEEDED = OpenApiResponse(
    response=PolymorphicProxySerializer(
        component_name="PluginConfigByTypeError",
        serializers=[PluginConfigInvalidSerializer, PluginKindErrorSerializer],
        resource_type_field_name=None,
    ),
    description=(
        "The config is not valid (as for plugins/{kind}/{type}/validate), or kind is needed "
        "(the type names plugins of several kinds) or is not a kind."
    ),
    examples=[
        *CONFIG_INVALID.examples,
        OpenApiExample(
            "Ambiguous type",
            value={
                "kind": [
                    "'kafka' is the type of more than one plugin (source, sink); "
                    "say which with ?kind=source or ?kind=sink"
                ]
            },
        ),
    ],
)

RULES_INVALID = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description=(
        "A rule or the event is invalid: every problem, keyed by its path in the body "
        "(rules[1].pattern, rules[0].name, rules, event)."
    ),
    examples=[
        OpenApiExample(
            "Invalid pattern of the second rule",
            value={
                "rules[1].pattern": [
                    "source: must be an object or an array of match values, got a string; "
                    'write ["aws.ec2"] to match that value'
                ]
            },
        )
    ],
)
RULES_TEST_ANSWER = OpenApiExample(
    "Orders over 100, and every event",
    response_only=True,
    status_codes=["200"],
    value={
        "results": [
            {
                "rule": "big-orders",
                "matched": True,
                "verdict": "matched",
                "pattern_matched": True,
                "stage": "",
                "reason": "",
            },
            {
                "rule": "eu-orders",
                "matched": False,
                "verdict": "no_match",
                "pattern_matched": False,
                "stage": "",
                "reason": "Its pattern does not match the event.",
            },
            {
                "rule": "us-only",
                "matched": False,
                "verdict": "dropped",
                "pattern_matched": True,
                "stage": "transforms[0]",
                "reason": "Its pattern matches; its filter (transform 1) drops the event.",
            },
            {
                "rule": "everything",
                "matched": None,
                "verdict": "undecided",
                "pattern_matched": True,
                "stage": "transforms[0]",
                "reason": "Its pattern matches, but its transform 1 (mask) runs only in Spark: "
                "whether the event reaches the sinks is not decided here.",
            },
        ]
    },
)
RULES_TEST_EXAMPLE = OpenApiExample(
    "Orders over 100, and every event",
    request_only=True,
    value={
        "rules": [
            {
                "name": "big-orders",
                "pattern": {"data": {"amount": [{"numeric": [">", 100]}]}},
                "enabled": True,
            },
            {"name": "eu-orders", "pattern": {"data": {"region": ["eu"]}}},
            {
                "name": "us-only",
                "pattern": {"type": [{"suffix": ".created"}]},
                "transforms": [
                    {"type": "filter", "config": {"pattern": {"data": {"region": ["eu"]}}}}
                ],
            },
            {
                "name": "everything",
                "pattern": None,
                "transforms": [{"type": "mask", "config": {"fields": ["data.card"]}}],
            },
        ],
        "event": {
            "specversion": "1.0",
            "id": "orders/0/42",
            "source": "kafka://orders",
            "type": "com.example.order.created",
            "data": {"amount": 120, "region": "us"},
        },
    },
)
