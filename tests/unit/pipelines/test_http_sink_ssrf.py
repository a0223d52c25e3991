"""The HTTP sink's SSRF guard: forbidden addresses at spec validation and at connect time."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest
from pydantic import ValidationError
from pyspark.sql import SparkSession

from pipelines.net import (
    ALLOW_ENV,
    AllowList,
    ForbiddenAddress,
    GuardedPoolManager,
    address_literal,
    check_url_host,
    forbidden_reason,
    vetted_addresses,
)
from pipelines.sinks.http import _Sender, deliver_http
from pipelines.spec import SpecError, validate_spec
from pipelines.spec.configs import HttpSinkConfig
from tests.support.http_server import Answer, RecordingServer
from tests.unit.pipelines.test_http_sink import event_row, events

FORBIDDEN_URLS = [
    ("http://127.0.0.1:8080/e", "loopback"),
    ("http://10.1.2.3/e", "private"),
    ("http://192.168.0.7/e", "private"),
    ("http://172.16.5.4/e", "private"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://[::1]:8080/e", "loopback"),
    ("http://[::ffff:127.0.0.1]/e", "IPv4-mapped loopback"),
    ("http://[::ffff:169.254.169.254]/e", "IPv4-mapped link-local"),
    ("http://[fd00::1]/e", "private"),
    ("http://[fe80::1]/e", "link-local"),
    ("http://0.0.0.0/e", "unspecified"),
    ("http://224.0.0.1/e", "multicast"),
    ("http://240.0.0.1/e", "reserved"),
    ("http://100.64.0.1/e", "shared"),
    ("http://2130706433/e", "loopback"),  # 127.0.0.1 as one number: C resolvers take it
    ("http://127.1/e", "loopback"),
    ("http://localhost:8080/e", "loopback host"),
    ("http://LOCALHOST./e", "loopback host"),
    ("http://api.localhost/e", "loopback host"),
    # IPv6 forms that embed a forbidden IPv4 address (issue 12, finding 8)
    ("http://[2002:7f00:1::]/", "6to4 loopback"),  # 6to4 form of 127.0.0.1
    ("http://[2002:a9fe:a9fe::]/latest/meta-data/", "6to4 link-local"),
    ("http://[2002:a00:1::1]/e", "6to4 private"),
    ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/e", "Teredo loopback"),  # client 127.0.0.1
    ("http://[64:ff9b::7f00:1]/e", "NAT64 loopback"),
    ("http://[64:ff9b::a9fe:a9fe]/e", "NAT64 link-local"),
    ("http://[::127.0.0.1]/e", "IPv4-compatible loopback"),
    ("http://[::a9fe:a9fe]/e", "IPv4-compatible link-local"),
]


@pytest.fixture(autouse=True)
def no_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOW_ENV, raising=False)


def sink_spec(url: str) -> dict[str, Any]:
    return {
        "source": {"type": "generator", "config": {}},
        "sink": {"type": "http", "config": {"url": url}},
    }


@pytest.mark.parametrize(("url", "reason"), FORBIDDEN_URLS)
def test_forbidden_hosts_are_refused_at_validation(url: str, reason: str) -> None:
    with pytest.raises(ValidationError) as raised:
        HttpSinkConfig(url=url)
    [error] = raised.value.errors()
    assert error["loc"] == ("url",)
    assert reason in error["msg"] and ALLOW_ENV in error["msg"], error["msg"]


def test_the_spec_error_names_the_field_path() -> None:
    with pytest.raises(SpecError) as raised:
        validate_spec(sink_spec("http://169.254.169.254/latest/meta-data/"))
    [message] = raised.value.errors["sink.config.url"]
    assert "169.254.169.254 is a link-local address" in message


@pytest.mark.parametrize(
    "url",
    [
        "https://api.example.com/e",
        "http://8.8.8.8/e",
        "http://[2001:4860:4860::8888]/e",
        "http://my-service.internal/e",  # a name: checked at connect time
    ],
)
def test_public_and_named_hosts_pass_validation(url: str) -> None:
    assert HttpSinkConfig(url=url).url == url


@pytest.mark.parametrize(
    ("allow", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:8080/e"),
        ("127.0.0.0/8", "http://127.1/e"),
        ("127.0.0.0/8", "http://[::ffff:127.0.0.1]/e"),
        ("10.0.0.0/8, 169.254.169.254", "http://10.1.2.3/e"),
        ("10.0.0.0/8, 169.254.169.254", "http://169.254.169.254/e"),
        ("::1", "http://[::1]:8080/e"),
        ("[::1]", "http://[::1]:8080/e"),
        ("fc00::/7", "http://[fd00::1]/e"),
        ("localhost", "http://localhost:8080/e"),
        ("api.internal,Localhost", "http://localhost:8080/e"),
    ],
)
def test_the_allow_list_lets_them_through(
    monkeypatch: pytest.MonkeyPatch, allow: str, url: str
) -> None:
    monkeypatch.setenv(ALLOW_ENV, allow)
    assert HttpSinkConfig(url=url).url == url


def test_an_allow_list_entry_allows_only_what_it_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_ENV, "10.0.0.0/8")
    with pytest.raises(ValidationError, match="loopback"):
        HttpSinkConfig(url="http://127.0.0.1/e")


def test_a_bad_allow_list_entry_is_named() -> None:
    with pytest.raises(ValueError, match=r"'10\.0\.0\.0/33'"):
        AllowList.parse("10.0.0.0/33")


def test_forbidden_reason_judges_mapped_addresses_as_ipv4() -> None:
    assert (
        forbidden_reason(ipaddress.ip_address("::ffff:10.0.0.1")) == "IPv4-mapped private address"
    )
    assert forbidden_reason(ipaddress.ip_address("::ffff:8.8.8.8")) is None
    assert forbidden_reason(ipaddress.ip_address("93.184.216.34")) is None


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("2002:7f00:1::", "6to4 loopback address"),
        ("2002:808:808::1", "6to4 address (deprecated relay form, RFC 7526)"),  # of 8.8.8.8
        ("64:ff9b::808:808", None),  # NAT64 of a public address: where DNS64 sends it
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo loopback address"),
        ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", "private address"),  # Teredo of 8.8.8.8
        ("::127.0.0.1", "IPv4-compatible loopback address"),
        ("::8.8.8.8", "reserved address"),  # IPv4-compatible forms are never routed
        ("::1", "loopback address"),
        ("::", "unspecified address"),
    ],
)
def test_forbidden_reason_judges_embedded_ipv4_addresses(address: str, reason: str | None) -> None:
    assert forbidden_reason(ipaddress.ip_address(address)) == reason


def test_6to4_loopback_is_refused_in_a_spec_and_after_resolution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(SpecError) as raised:
        validate_spec(sink_spec("http://[2002:7f00:1::]/"))
    [message] = raised.value.errors["sink.config.url"]
    assert "2002:7f00:1:: is a 6to4 loopback address" in message

    def six_to_four(host, port, *args, **kwargs):
        return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("2002:7f00:1::", port, 0, 0))]

    monkeypatch.setattr(socket, "getaddrinfo", six_to_four)
    with pytest.raises(ForbiddenAddress, match=r"\(2002:7f00:1::\) is a 6to4 loopback"):
        vetted_addresses("sixtofour.example", 80, AllowList())


def test_address_literals_include_the_legacy_ipv4_forms() -> None:
    assert address_literal("0x7f.0.0.1") == ipaddress.ip_address("127.0.0.1")
    assert address_literal("example.com") is None
    assert address_literal("1e100.net") is None


def test_check_url_host_takes_an_explicit_allow_list() -> None:
    check_url_host("127.0.0.1", AllowList.parse("127.0.0.1"))
    with pytest.raises(ValueError, match="loopback"):
        check_url_host("127.0.0.1", AllowList())


# -- connect time: names are resolved, checked and pinned ------------------------------------


def test_a_name_resolving_to_loopback_is_refused_after_resolution() -> None:
    with pytest.raises(ForbiddenAddress, match=r"localhost \(127\.0\.0\.1\) is a loopback"):
        vetted_addresses("localhost", 80, AllowList())


def test_a_name_with_any_forbidden_address_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def two_answers(host, port, *args, **kwargs):
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.5", port)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", two_answers)
    with pytest.raises(ForbiddenAddress, match=r"rebind\.example \(10\.0\.0\.5\) is a private"):
        vetted_addresses("rebind.example", 80, AllowList())


def test_the_connection_goes_to_the_checked_address(monkeypatch: pytest.MonkeyPatch) -> None:
    """DNS rebinding: the name is resolved once per connection; what is checked is used."""
    with RecordingServer(lambda request: Answer(200)) as server:
        port = int(server.url.rsplit(":", 1)[1])
        real = socket.getaddrinfo
        lookups: list[str] = []

        def resolve(host, *args, **kwargs):
            lookups.append(host)
            return real("127.0.0.1" if host == "svc.test" else host, *args, **kwargs)

        monkeypatch.setattr(socket, "getaddrinfo", resolve)
        pool = GuardedPoolManager(AllowList.parse("127.0.0.1"), retries=False)
        response = pool.request("GET", f"http://svc.test:{port}/x", redirect=False)
        assert response.status == 200
        assert lookups == ["svc.test"]  # resolved once, by the guard
        assert server.requests[0].header("Host") == f"svc.test:{port}"
        with pytest.raises(ForbiddenAddress):
            GuardedPoolManager(AllowList(), retries=False).request(
                "GET", f"http://svc.test:{port}/x"
            )
    assert len(server.requests) == 1


def test_a_redirect_to_a_forbidden_host_is_not_followed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_ENV, "127.0.0.1")
    redirect = Answer(302, b"", {"Location": "http://169.254.169.254/latest/meta-data/"})
    with RecordingServer(lambda request: redirect) as server:
        config = HttpSinkConfig.model_validate({"url": f"{server.url}/e", "retry": {"attempts": 1}})
        sender = _Sender(config, None)
        outcome = sender._attempt(_row())
        sender.close()
    assert outcome.error_class == "HttpStatus302"
    assert len(server.requests) == 1


def _row() -> Any:
    from pyspark.sql import Row

    return Row(id="e-1", body="{}", headers={}, age_from_micros=None)


@pytest.mark.spark
def test_a_forbidden_address_is_a_dead_letter_not_a_retry(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Validation passed (a name), the name resolves to loopback: ForbiddenAddress, once."""
    with RecordingServer(lambda request: Answer(200)) as server:
        port = int(server.url.rsplit(":", 1)[1])
        # ``localhost`` is refused at validation already; validate with it allowed, then run
        # the sink with the allow-list empty, as a worker without the variable would.
        monkeypatch.setenv(ALLOW_ENV, "localhost")
        config = HttpSinkConfig.model_validate(
            {"url": f"http://localhost:{port}/e", "retry": {"attempts": 3}}
        )
        monkeypatch.delenv(ALLOW_ENV)
        dead = deliver_http(events(spark, event_row(1)), config).collect()
    assert server.requests == []
    [letter] = dead
    assert letter.error_class == "ForbiddenAddress"
    assert "localhost (127.0.0.1) is a loopback address" in letter.message
    assert letter.message.endswith("(after 1 attempt(s))")  # refused, not retried


@pytest.mark.spark
def test_the_allow_list_lets_the_sink_deliver(spark: SparkSession, monkeypatch) -> None:
    monkeypatch.setenv(ALLOW_ENV, "localhost")
    with RecordingServer(lambda request: Answer(200)) as server:
        port = int(server.url.rsplit(":", 1)[1])
        config = HttpSinkConfig(url=f"http://localhost:{port}/e")
        dead = deliver_http(events(spark, event_row(1)), config).collect()
    assert dead == [] and len(server.requests) == 1
