"""The allow-list of the Kafka client properties a Kafka stage may set beside its structured
fields (``properties``): tuning settings only, each value of a checked form and each number
within a range (:func:`check_properties`). A table of data, with its one check.
"""

from __future__ import annotations

import re

_OWNED_PROPERTIES = (
    "kafka.bootstrap.servers",
    "kafka.security.protocol",
    "kafka.sasl.mechanism",
    "kafka.sasl.jaas.config",
    "kafka.key.serializer",
    "kafka.value.serializer",
    "kafka.key.deserializer",
    "kafka.value.deserializer",
    "kafka.auto.offset.reset",
    "kafka.enable.auto.commit",
    "kafka.interceptor.classes",
)
"""Properties set by a structured field, or that Spark manages itself and refuses."""
_SECRET_PROPERTY = re.compile(r"password|jaas|secret|token|\.key$", re.IGNORECASE)

_NUMBER = re.compile(r"-?[0-9]{1,19}")
_WORD = re.compile(r"[A-Za-z0-9._-]{1,249}")
_BOOLEAN = re.compile(r"true|false")
ALLOWED_PROPERTIES: dict[str, re.Pattern[str]] = {
    **dict.fromkeys(
        (
            # consumer
            "kafka.fetch.min.bytes",
            "kafka.fetch.max.bytes",
            "kafka.fetch.max.wait.ms",
            "kafka.max.partition.fetch.bytes",
            "kafka.max.poll.records",
            "kafka.max.poll.interval.ms",
            "kafka.session.timeout.ms",
            "kafka.heartbeat.interval.ms",
            "kafka.default.api.timeout.ms",
            # producer
            "kafka.linger.ms",
            "kafka.batch.size",
            "kafka.buffer.memory",
            "kafka.max.request.size",
            "kafka.max.block.ms",
            "kafka.delivery.timeout.ms",
            "kafka.retries",
            "kafka.max.in.flight.requests.per.connection",
            "kafka.compression.gzip.level",
            "kafka.compression.lz4.level",
            "kafka.compression.zstd.level",
            # both
            "kafka.request.timeout.ms",
            "kafka.receive.buffer.bytes",
            "kafka.send.buffer.bytes",
            "kafka.reconnect.backoff.ms",
            "kafka.reconnect.backoff.max.ms",
            "kafka.retry.backoff.ms",
            "kafka.retry.backoff.max.ms",
            "kafka.connections.max.idle.ms",
            "kafka.metadata.max.age.ms",
            "kafka.socket.connection.setup.timeout.ms",
            "kafka.socket.connection.setup.timeout.max.ms",
        ),
        _NUMBER,
    ),
    **dict.fromkeys(
        ("kafka.check.crcs", "kafka.allow.auto.create.topics", "kafka.enable.idempotence"),
        _BOOLEAN,
    ),
    **dict.fromkeys(("kafka.client.id", "kafka.client.rack", "kafka.group.id"), _WORD),
    "kafka.acks": re.compile(r"all|-1|0|1"),
    "kafka.compression.type": re.compile(r"none|gzip|snappy|lz4|zstd"),
    "kafka.isolation.level": re.compile(r"read_committed|read_uncommitted"),
    "kafka.client.dns.lookup": re.compile(
        r"use_all_dns_ips|resolve_canonical_bootstrap_servers_only"
    ),
}
"""The Kafka client properties a stage may set, each with the form its value must have.

An allow-list of tuning settings: Kafka's client configuration also names classes the JVM
loads (``*.class``, ``*.classes``, ``metric.reporters``, ``config.providers``), files and URLs
it reads (``sasl.oauthbearer.*.url`` reads ``file:`` URLs, ``ssl.*.location``) and login
modules, and every one of those would hand the driver's JVM to whoever writes the spec."""

_KIB, _MIB = 1024, 1024 * 1024
_SECOND, _MINUTE, _HOUR = 1_000, 60_000, 3_600_000
NUMBER_RANGES: dict[str, tuple[int, int]] = {
    # consumer
    "kafka.fetch.min.bytes": (0, 1 * _MIB),
    "kafka.fetch.max.bytes": (0, 64 * _MIB),
    "kafka.fetch.max.wait.ms": (0, 10 * _SECOND),
    "kafka.max.partition.fetch.bytes": (0, 16 * _MIB),
    "kafka.max.poll.records": (1, 10_000),
    "kafka.max.poll.interval.ms": (1 * _SECOND, 30 * _MINUTE),
    "kafka.session.timeout.ms": (1 * _SECOND, 5 * _MINUTE),
    "kafka.heartbeat.interval.ms": (100, 1 * _MINUTE),
    "kafka.default.api.timeout.ms": (1 * _SECOND, 10 * _MINUTE),
    # producer
    "kafka.linger.ms": (0, 10 * _SECOND),
    "kafka.batch.size": (0, 4 * _MIB),
    "kafka.buffer.memory": (1 * _MIB, 128 * _MIB),
    "kafka.max.request.size": (1 * _KIB, 16 * _MIB),
    "kafka.max.block.ms": (0, 10 * _MINUTE),
    "kafka.delivery.timeout.ms": (1 * _SECOND, 1 * _HOUR),
    "kafka.retries": (0, 2_147_483_647),  # a count: costs no memory
    "kafka.max.in.flight.requests.per.connection": (1, 10),
    "kafka.compression.gzip.level": (-1, 9),
    "kafka.compression.lz4.level": (1, 17),
    "kafka.compression.zstd.level": (-7, 22),
    # both
    "kafka.request.timeout.ms": (1 * _SECOND, 10 * _MINUTE),
    "kafka.receive.buffer.bytes": (-1, 16 * _MIB),
    "kafka.send.buffer.bytes": (-1, 16 * _MIB),
    "kafka.reconnect.backoff.ms": (0, 1 * _MINUTE),
    "kafka.reconnect.backoff.max.ms": (0, 10 * _MINUTE),
    "kafka.retry.backoff.ms": (0, 1 * _MINUTE),
    "kafka.retry.backoff.max.ms": (0, 10 * _MINUTE),
    "kafka.connections.max.idle.ms": (-1, 1 * _HOUR),
    "kafka.metadata.max.age.ms": (1 * _SECOND, 1 * _HOUR),
    "kafka.socket.connection.setup.timeout.ms": (1 * _SECOND, 2 * _MINUTE),
    "kafka.socket.connection.setup.timeout.max.ms": (1 * _SECOND, 10 * _MINUTE),
}
"""The range each numeric property may take. Sizes are held to a few times Kafka's defaults:
the driver's JVM is shared by every channel it runs, and a ``batch.size`` or ``buffer.memory``
of 2 GiB asks it for an array it cannot have ("Requested array size exceeds VM limit"), which
ends the JVM and its neighbours. Times are held to what a client can sensibly wait."""


def check_properties(value: dict[str, str]) -> dict[str, str]:
    """Return Kafka client properties if each is one of :data:`ALLOWED_PROPERTIES` with a
    value of the form it allows (a field validator: pydantic has checked the types)."""
    for key, setting in value.items():
        if not key.startswith("kafka.") or key == "kafka.":
            raise ValueError(f"{key!r}: Kafka client properties start with 'kafka.'")
        if key in _OWNED_PROPERTIES or key.startswith("kafka.ssl."):
            raise ValueError(f"{key!r} is set by a field of its own (or managed by Spark)")
        if _SECRET_PROPERTY.search(key):
            raise ValueError(f"{key!r} looks like a secret: use the security fields")
        form = ALLOWED_PROPERTIES.get(key)
        if form is None:
            raise ValueError(
                f"{key!r} is not an allowed Kafka property; allowed: "
                + ", ".join(sorted(name.removeprefix("kafka.") for name in ALLOWED_PROPERTIES))
            )
        if not form.fullmatch(setting):  # a str: pydantic has validated dict[str, str]
            raise ValueError(f"{key!r}: {setting!r} is not a valid value")
        bounds = NUMBER_RANGES.get(key)
        if bounds is not None and not bounds[0] <= int(setting) <= bounds[1]:
            low, high = bounds
            raise ValueError(
                f"{key!r}: {setting} is out of range: from {low:,} to {high:,} (the driver's "
                "JVM is shared with other channels: sizes are held to a few times Kafka's "
                "defaults)"
            )
    api, request = value.get("kafka.default.api.timeout.ms"), value.get("kafka.request.timeout.ms")
    if api is not None and request is not None and int(api) < int(request):
        raise ValueError(
            f"'kafka.default.api.timeout.ms' ({api}) must be no smaller than "
            f"'kafka.request.timeout.ms' ({request}): Kafka's clients refuse it"
        )
    return value
