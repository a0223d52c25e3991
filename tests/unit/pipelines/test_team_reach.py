"""Each team's reach (issue 33): the model, and every check that consults it - topic prefixes
(patterns included), files roots and the hosts of the allow-lists - at spec validation and at
connection time, on the validating thread and on the threads Spark calls back on."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.net import (
    ALLOW_ENV,
    HTTP_ENRICH,
    HTTP_SINK,
    JDBC_SINK,
    SCHEMA_REGISTRY,
    ForbiddenAddress,
    GuardedPoolManager,
    allow_list,
)
from pipelines.spec import SpecError, validate_spec
from pipelines.spec.paths import (
    FILES_ROOTS_ENV,
    FILES_SCHEMES_ENV,
    VAR_DIR_ENV,
    files_roots,
    resolve_files_location,
)
from pipelines.spec.reach import (
    MAX_HOSTS,
    MAX_PREFIXES,
    InvalidReach,
    Reach,
    carried,
    check_topic_pattern,
    current,
    in_effect,
    literal_prefix,
    parse_reach,
)
from tests.support.http_server import Answer, RecordingServer

KAFKA = "localhost:9092"


def errors_of(spec: dict[str, Any], team: str, reach: dict[str, Any]) -> dict[str, list[str]]:
    with in_effect(team, reach), pytest.raises(SpecError) as raised:
        validate_spec(spec)
    return raised.value.errors


def kafka_spec(source: dict[str, Any] | None = None, sink_topic: str = "b.out") -> dict[str, Any]:
    return {
        "source": {
            "type": "kafka",
            "config": {"bootstrap_servers": KAFKA, **(source or {"topics": ["b.in"]})},
        },
        "sink": {"type": "kafka", "config": {"bootstrap_servers": KAFKA, "topic": sink_topic}},
    }


# -- the model -------------------------------------------------------------------------------


def test_an_empty_reach_sets_nothing_and_keys_left_out_are_the_defaults() -> None:
    assert parse_reach({}).given() == {}
    assert parse_reach(None) == Reach()
    reach = parse_reach({"topic_prefixes": ["b.", "b."], "http_sink": ["API.Internal", "[::1]"]})
    assert reach.given() == {"topic_prefixes": ["b."], "http_sink": ["api.internal", "::1"]}
    assert reach.files_roots is None


@pytest.mark.parametrize(
    ("reach", "path", "message"),
    [
        ({"topics": ["a"]}, "topics", "is not a key of a reach; the keys are: topic_prefixes"),
        ({"topic_prefixes": [""]}, "topic_prefixes", "[0]: must not be empty"),
        ({"topic_prefixes": ["a b"]}, "topic_prefixes", "is not the start of a Kafka topic"),
        ({"topic_prefixes": ["x" * 250]}, "topic_prefixes", "longer than 249 characters"),
        ({"topic_prefixes": "a."}, "topic_prefixes", "valid list"),
        ({"topic_prefixes": [1]}, "topic_prefixes[0]", "valid string"),
        ({"files_roots": ["data"]}, "files_roots", "'data' is not an absolute path"),
        ({"files_roots": ["/srv/../etc"]}, "files_roots", "'..' segments"),
        ({"files_roots": ["/"]}, "files_roots", "the whole file system"),
        ({"files_roots": ["/srv/\n"]}, "files_roots", "control characters"),
        ({"http_sink": ["a b"]}, "http_sink", "'a b' is neither a host name"),
        ({"jdbc_sink": ["10.0.0.0/33"]}, "jdbc_sink", "is neither a host name"),
        ({"http_enrich": ["api,internal"]}, "http_enrich", "is neither a host name"),
        ({"schema_registry": ["x" * 254]}, "schema_registry", "longer than 253"),
    ],
)
def test_bad_entries_are_refused_with_their_field_path(
    reach: dict[str, Any], path: str, message: str
) -> None:
    with pytest.raises(InvalidReach) as raised:
        parse_reach(reach)
    assert list(raised.value.errors) == [path]
    assert message in raised.value.errors[path][0]


def test_the_lists_are_bounded() -> None:
    with pytest.raises(InvalidReach, match="at most 100 items"):
        parse_reach({"topic_prefixes": [f"t{n}." for n in range(MAX_PREFIXES + 1)]})
    with pytest.raises(InvalidReach, match="at most 256 items"):
        parse_reach({"http_sink": [f"h{n}.internal" for n in range(MAX_HOSTS + 1)]})
    with pytest.raises(InvalidReach, match="must be an object"):
        parse_reach(["http_sink"])


def test_hosts_addresses_and_cidrs_are_entries() -> None:
    reach = parse_reach({"jdbc_sink": ["db.internal", "10.0.0.5", "10.0.0.0/8", "fd00::/8"]})
    assert reach.jdbc_sink == ["db.internal", "10.0.0.5", "10.0.0.0/8", "fd00::/8"]


# -- topic prefixes --------------------------------------------------------------------------


def test_a_spec_without_a_limit_on_topics_names_any_topic() -> None:
    with in_effect("b", {"http_sink": []}):
        validate_spec(kafka_spec({"topics": ["a.orders"]}, sink_topic="a.out"))
    validate_spec(kafka_spec({"topics": ["a.orders"]}))  # no reach in effect


def test_every_topic_read_or_written_must_start_with_a_prefix() -> None:
    reach = {"topic_prefixes": ["b.", "shared-b-"]}
    with in_effect("b", reach):
        validate_spec(kafka_spec({"topics": ["b.in", "shared-b-x"]}, sink_topic="shared-b-out"))
    errors = errors_of(kafka_spec({"topics": ["b.in", "a.orders"]}, "a.out"), "b", reach)
    assert errors == {
        "source.config.topics": [
            "topic 'a.orders' is outside the team's reach: team b may reach only topics "
            "starting with 'b.', 'shared-b-'"
        ],
        "sink.config.topic": [
            "topic 'a.out' is outside the team's reach: team b may reach only topics starting "
            "with 'b.', 'shared-b-'"
        ],
    }


def test_no_prefix_reaches_no_topic() -> None:
    errors = errors_of(kafka_spec(), "b", {"topic_prefixes": []})
    assert "team b may reach no Kafka topic" in errors["source.config.topics"][0]


def test_bus_targets_and_dead_letter_topics_are_checked_where_they_are() -> None:
    kafka = {"type": "kafka", "config": {"bootstrap_servers": KAFKA, "topic": "a.stolen"}}
    spec = {
        "source": {"type": "kafka", "config": {"bootstrap_servers": KAFKA, "topics": ["b.in"]}},
        "rules": [
            {"name": "ok", "sinks": [{**kafka, "config": {**kafka["config"], "topic": "b.x"}}]},
            {"name": "bad", "sinks": [kafka]},
        ],
        "errors": {"tolerance": "all", "dead_letter": kafka},
    }
    errors = errors_of(spec, "b", {"topic_prefixes": ["b."]})
    assert set(errors) == {"rules[1].sinks[0].config.topic", "errors.dead_letter.config.topic"}
    assert (
        "team b may reach only topics starting with 'b.'"
        in errors["errors.dead_letter.config.topic"][0]
    )


@pytest.mark.parametrize(
    "pattern",
    [r"b\..*", r"^b\.orders-.*", r"b\.(orders|refunds)", r"b\.[a-z]+", r"b\.x\Q|\E.*"],
)
def test_a_pattern_anchored_on_a_prefix_is_accepted(pattern: str) -> None:
    with in_effect("b", {"topic_prefixes": ["b."]}):
        assert check_topic_pattern(pattern) == pattern


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (".*", "may match topics outside"),
        ("b..*", "may match topics outside"),  # '.' unescaped: b-anything
        (r"b\.x|a\..*", "alternation"),
        (r"b\.[a|]x|.*", "alternation"),
        (r"b\.(x)|.*", "alternation"),
        (r"(?i)b\..*", "may match topics outside"),
        (r"b?\..*", "may match topics outside"),
        (r"\Qb.\E.*", "may match topics outside"),
        (r"b\.[]|.*]", "may not start with ']'"),
    ],
)
def test_a_pattern_that_may_reach_past_the_prefixes_is_refused(pattern: str, why: str) -> None:
    with (
        in_effect("b", {"topic_prefixes": ["b."]}),
        pytest.raises(ValueError, match=re.escape(why)),
    ):
        check_topic_pattern(pattern)


def test_a_refused_pattern_is_a_field_error_naming_the_team() -> None:
    spec = kafka_spec({"topic_pattern": "orders-.*"})
    errors = errors_of(spec, "b", {"topic_prefixes": ["b."]})
    assert list(errors) == ["source.config.topic_pattern"]
    assert (
        "team b may reach only topics starting with 'b.'"
        in errors["source.config.topic_pattern"][0]
    )


def test_the_literal_prefix_of_a_pattern() -> None:
    assert literal_prefix(r"^pay\.orders-[0-9]+") == "pay.orders-"
    assert literal_prefix("payx?") == "pay"
    assert literal_prefix(r"pay\d") == "pay"
    assert literal_prefix("pay{2}") == "pa"
    assert literal_prefix("(pay)") == ""


# -- Kafka clusters --------------------------------------------------------------------------


def test_kafka_stages_name_only_the_brokers_of_the_reach() -> None:
    reach = {"kafka_clusters": ["LocalHost:9092", "[0:0::1]:9093"]}
    assert parse_reach(reach).kafka_clusters == ["localhost:9092", "[::1]:9093"]
    with in_effect("b", reach):
        validate_spec(kafka_spec())  # localhost:9092 is listed
        spec = kafka_spec()
        spec["source"]["config"]["bootstrap_servers"] = "localhost:9092,[::1]:9093"
        validate_spec(spec)
    spec = kafka_spec()
    spec["sink"]["config"]["bootstrap_servers"] = "localhost:9092,other:9092"
    errors = errors_of(spec, "b", reach)
    assert errors == {
        "sink.config.bootstrap_servers": [
            "broker 'other:9092' is outside the team's reach: team b may use only the Kafka "
            "brokers 'localhost:9092', '[::1]:9093'"
        ]
    }
    validate_spec(spec)  # no reach: any cluster


@pytest.mark.parametrize(
    "entry", ["localhost", "localhost:0", "local host:9092", "a:99999", "[x]:1"]
)
def test_a_broker_entry_is_host_and_port(entry: str) -> None:
    with pytest.raises(InvalidReach, match="is not a Kafka broker as host:port"):
        parse_reach({"kafka_clusters": [entry]})


# -- files roots -----------------------------------------------------------------------------


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The site's root ``site/`` (environment), a team's ``team-b/``, Sluice's ``var/``."""
    for name in ("site", "team-b", "var"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv(FILES_ROOTS_ENV, str(tmp_path / "site"))
    monkeypatch.setenv(VAR_DIR_ENV, str(tmp_path / "var"))
    monkeypatch.setenv(FILES_SCHEMES_ENV, "s3a")
    return tmp_path


def files_spec(path: str) -> dict[str, Any]:
    return {
        "source": {"type": "generator", "config": {}},
        "sink": {"type": "files", "config": {"path": path, "format": "jsonl"}},
    }


def test_a_teams_roots_replace_the_sites(roots: Path) -> None:
    reach = {"files_roots": [str(roots / "team-b")]}
    with in_effect("b", reach):
        assert files_roots() == ((roots / "team-b").resolve(),)
        validate_spec(files_spec(str(roots / "team-b" / "out")))
        validate_spec(files_spec("relative/out"))  # under the team's first root
        assert resolve_files_location("relative") == f"file://{roots / 'team-b' / 'relative'}"
    errors = errors_of(files_spec(str(roots / "site" / "out")), "b", reach)
    assert errors["sink.config.path"][0].endswith(
        f"outside the files roots of team b's reach ({roots / 'team-b'}); a site admin sets "
        "them on the team"
    )
    validate_spec(files_spec(str(roots / "site" / "out")))  # the site's default elsewhere


def test_a_team_with_its_own_roots_cannot_use_other_schemes(roots: Path) -> None:
    validate_spec(files_spec("s3a://bucket/out"))
    errors = errors_of(files_spec("s3a://bucket/out"), "b", {"files_roots": [str(roots)]})
    assert "team b's reach sets its files roots" in errors["sink.config.path"][0]


def test_no_root_reaches_no_file(roots: Path) -> None:
    errors = errors_of(files_spec("out"), "b", {"files_roots": []})
    assert errors["sink.config.path"] == ["no files root is allowed (team b's reach lists none)"]


# -- the allow-lists -------------------------------------------------------------------------


def http_spec(url: str) -> dict[str, Any]:
    return {
        "source": {"type": "generator", "config": {}},
        "sink": {"type": "http", "config": {"url": url}},
    }


@pytest.mark.parametrize("outbound", [HTTP_SINK, JDBC_SINK, HTTP_ENRICH, SCHEMA_REGISTRY])
def test_each_list_of_a_reach_replaces_its_variable(
    outbound: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(outbound.allow_env, "10.0.0.0/8")
    with in_effect("b", {outbound.reach_key: ["db.internal"]}):
        team = allow_list(outbound)
    assert team.hosts == frozenset({"db.internal"}) and team.networks == ()
    assert team.granted_by == f"team b's reach ({outbound.reach_key})"
    with in_effect("b", {"topic_prefixes": ["b."]}):  # the list left out: the site's
        assert [str(n) for n in allow_list(outbound).networks] == ["10.0.0.0/8"]


def test_a_host_outside_the_teams_list_is_a_field_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ALLOW_ENV, "10.0.0.0/8")
    validate_spec(http_spec("http://10.1.2.3/e"))  # the site allows it
    errors = errors_of(http_spec("http://10.1.2.3/e"), "b", {"http_sink": ["172.16.0.0/12"]})
    assert errors == {
        "sink.config.url": [
            "10.1.2.3 is a private address; the HTTP sink refuses it unless team b's reach "
            "(http_sink) names it"
        ]
    }
    with in_effect("b", {"http_sink": ["10.1.2.3"]}):
        validate_spec(http_spec("http://10.1.2.3/e"))


def test_the_jdbc_host_is_checked_within_the_reach() -> None:
    spec = {
        "source": {"type": "generator", "config": {}},
        "sink": {"type": "jdbc", "config": {"url": "postgresql://10.0.0.5/db", "table": "t"}},
    }
    errors = errors_of(spec, "b", {"jdbc_sink": []})
    assert "team b's reach (jdbc_sink)" in errors["sink.config.url"][0]
    with in_effect("b", {"jdbc_sink": ["10.0.0.0/24"]}):
        validate_spec(spec)


def test_connections_are_guarded_by_the_teams_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """At connection time: a name resolving to loopback passes the site's list (it names
    127.0.0.1) but not a team's that does not."""
    monkeypatch.setenv(ALLOW_ENV, "127.0.0.1")
    real = socket.getaddrinfo

    def resolve(host: str, *args: Any, **kwargs: Any) -> Any:
        return real("127.0.0.1" if host == "svc.test" else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    with RecordingServer(lambda request: Answer(200)) as server:
        url = f"http://svc.test:{server.url.rsplit(':', 1)[1]}/x"
        assert GuardedPoolManager(allow_list(), retries=False).request("GET", url).status == 200
        with in_effect("b", {"http_sink": ["api.internal"]}):
            pool = GuardedPoolManager(allow_list(), retries=False)
        with pytest.raises(ForbiddenAddress, match=r"unless team b's reach \(http_sink\)"):
            pool.request("GET", url)
    assert len(server.requests) == 1


# -- the reach in effect, across threads ----------------------------------------------------


def test_carried_functions_run_with_the_reach_they_were_made_under() -> None:
    """Spark calls a foreachBatch function on a thread of its own: the reach goes with it."""
    seen: list[Any] = []

    def batch(_: Any, batch_id: int) -> None:
        scope = current()
        seen.append((batch_id, scope.team if scope else None))

    with in_effect("b", {"topic_prefixes": ["b."]}):
        function = carried(batch)
    plain = carried(batch)  # no reach in effect: the function itself
    assert plain is batch
    for target, batch_id in ((function, 1), (batch, 2)):
        thread = threading.Thread(target=target, args=(None, batch_id))
        thread.start()
        thread.join()
    assert seen == [(1, "b"), (2, None)]
    assert current() is None


# -- an event's topic, chosen as it is written ----------------------------------------------


@pytest.fixture
def routed(kafka_records: Callable[..., Any]) -> DataFrame:
    from pipelines.sources.kafka import kafka_records_to_events
    from pipelines.spec.configs import KafkaSourceConfig

    values = [b'{"to": "b.eu"}', b'{"to": "a.us"}', b'{"to": "b us"}']
    records = kafka_records([("b.in", 0, n, value) for n, value in enumerate(values)])
    return kafka_records_to_events(
        records, KafkaSourceConfig(bootstrap_servers="k:1", topics=["b.in"])
    )


@pytest.mark.spark
def test_an_events_topic_outside_the_reach_fails_that_event(routed: DataFrame) -> None:
    from pipelines.sinks.kafka import mark_bad_topics
    from pipelines.spec.configs import KafkaSinkConfig
    from tests.unit.pipelines.event_rows import failures

    with in_effect("b", {"topic_prefixes": ["b."]}):
        sink = KafkaSinkConfig(bootstrap_servers="k:1", topic="b.out", topic_field="data.to")
        marked = failures(mark_bad_topics(routed, sink))
    assert marked == [
        (
            "TopicNotAllowed",
            "event b.in/0/1: a.us is outside the team's reach: team b may reach only topics "
            "starting with 'b.'",
        ),
        ("InvalidTopic", "event b.in/0/2: b us is not a valid Kafka topic name"),
    ]
    unlimited = failures(mark_bad_topics(routed, sink))  # no reach: a.us is a topic like any
    assert [error_class for error_class, _ in unlimited] == ["InvalidTopic"]


@pytest.mark.spark
def test_a_bus_targets_event_topic_outside_the_reach_is_left_out(routed: DataFrame) -> None:
    from pipelines.bus.kafka import topic_columns
    from pipelines.bus.plan import TARGET, Target
    from pipelines.spec import StageSpec
    from pipelines.spec.configs import KafkaSinkConfig

    config = KafkaSinkConfig(bootstrap_servers="k:1", topic="b.out", topic_field="data.to")
    stage = StageSpec(type="kafka", config=config.model_dump())
    target = Target(index=0, rule=0, rule_name="r", position=0, stage=stage, config=config)
    rows = routed.withColumn(TARGET, F.lit(0))
    with in_effect("b", {"topic_prefixes": ["b."]}):
        topic, legal = topic_columns([target])
        kept = [row.t for row in rows.where(legal).select(topic.alias("t")).collect()]
    assert kept == ["b.eu"]
