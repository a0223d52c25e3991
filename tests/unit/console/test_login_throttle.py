"""Sign-in throttling on every door (issue 12, finding 7).

The issue: "30 wrong passwords on /login/ in 12.6 s, all answered, and the right one worked
straight after; /admin/login/ and DRF's /api/auth/login/ are two more doors." Now each door
refuses a user name from an address after SLUICE_LOGIN_FAILURE_LIMIT (5) failures, for the
cool-off, without checking the password; the lockout is audited; an operator can unlock.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from console.audit import client_address
from console.models import AuditEvent

pytestmark = pytest.mark.django_db

PASSWORD = "s3cret-pass"
ATTACKER = "203.0.113.7"

#: Every door that takes a password, and what a successful sign-in answers there.
DOORS = ["/login/", "/admin/login/", "/api/auth/login/"]


@pytest.fixture
def alice(django_user_model):
    """Staff, so the admin door lets her in too."""
    return django_user_model.objects.create_user("alice", password=PASSWORD, is_staff=True)


def sign_in(client: Client, door: str, password: str, username: str = "alice", **extra):
    return client.post(
        door,
        {"username": username, "password": password, "next": "/"},
        REMOTE_ADDR=ATTACKER,
        **extra,
    )


def without_nonce(page: bytes) -> bytes:
    """The page without its per-response CSP nonce."""
    return re.sub(rb'nonce="[^"]*"', b"", page)


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.parametrize("door", DOORS)
def test_thirty_wrong_passwords_lock_the_door_and_the_right_one_then_fails(door, alice, settings):
    client = Client()
    answers = [sign_in(client, door, f"guess-{n}").status_code for n in range(30)]

    limit = settings.AXES_FAILURE_LIMIT
    assert answers[: limit - 1] == [200] * (limit - 1)  # the form again, "did not match"
    assert answers[limit - 1 :] == [429] * (30 - limit + 1)

    right = sign_in(client, door, PASSWORD)
    assert right.status_code == 429
    assert not signed_in(client)


@pytest.mark.parametrize("door", DOORS)
def test_before_the_limit_the_right_password_still_works(door, alice, settings):
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in(client, door, f"guess-{n}")

    assert sign_in(client, door, PASSWORD).status_code == 302
    assert signed_in(client)


def test_a_locked_answer_does_not_tell_whether_the_password_was_right(alice, settings):
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT):
        sign_in(client, "/login/", f"guess-{n}")

    right = sign_in(client, "/login/", PASSWORD)
    wrong = sign_in(client, "/login/", "another-guess")

    assert right.status_code == wrong.status_code == 429
    assert without_nonce(right.content) == without_nonce(wrong.content)
    assert right["Retry-After"] == wrong["Retry-After"] == str(15 * 60)


def test_a_browser_gets_a_page_and_the_api_door_json(alice, settings):
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT):
        sign_in(client, "/login/", f"guess-{n}")

    page = sign_in(client, "/login/", PASSWORD, HTTP_ACCEPT="text/html,*/*;q=0.8")
    assert page.status_code == 429
    assert page["Content-Type"].startswith("text/html")
    assert "Too many failed sign-ins" in page.content.decode()
    assert "Content-Security-Policy" in page

    for n in range(settings.AXES_FAILURE_LIMIT):
        sign_in(client, "/api/auth/login/", f"guess-{n}", username="bob")
    api = sign_in(client, "/api/auth/login/", "x", username="bob")
    assert api.status_code == 429
    assert api.json() == {
        "detail": (
            "Too many failed sign-ins for this user from your address. Try again in 15 minutes, "
            "or ask an administrator to unlock the account."
        ),
        "retry_after": 900,
    }


def test_the_lockout_is_audited_once_and_every_refused_attempt_too(alice, settings):
    client = Client()
    for n in range(30):
        sign_in(client, "/login/", f"guess-{n}", HTTP_USER_AGENT="hydra")

    lockout = AuditEvent.objects.get(action="auth.lockout")
    assert (lockout.object_id, lockout.remote_addr, lockout.outcome, lockout.via) == (
        "alice",
        ATTACKER,
        429,
        "web",
    )
    assert lockout.user_agent == "hydra"
    assert lockout.changes == {
        "username": "alice",
        "failures": settings.AXES_FAILURE_LIMIT,
        "cooloff_seconds": 900,
    }
    assert AuditEvent.objects.filter(action="auth.login_failed").count() == 30


def test_another_user_from_the_same_address_is_not_locked(alice, django_user_model, settings):
    django_user_model.objects.create_user("bob", password="bobs-pass-123")
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT):
        sign_in(client, "/login/", f"guess-{n}")

    assert sign_in(Client(), "/login/", "bobs-pass-123", username="bob").status_code == 302


def test_the_same_user_from_another_address_is_not_locked(alice, settings):
    """User name and address together: an attacker cannot lock a colleague out everywhere."""
    for n in range(settings.AXES_FAILURE_LIMIT):
        sign_in(Client(), "/login/", f"guess-{n}")

    elsewhere = Client().post(
        "/login/", {"username": "alice", "password": PASSWORD}, REMOTE_ADDR="198.51.100.20"
    )
    assert elsewhere.status_code == 302


def test_a_forged_forwarded_for_header_does_not_escape_the_lock(alice, settings):
    """Without SLUICE_TRUSTED_PROXIES, X-Forwarded-For is the client's word, never counted."""
    answers = [
        sign_in(Client(), "/login/", f"guess-{n}", HTTP_X_FORWARDED_FOR=f"10.9.8.{n}").status_code
        for n in range(settings.AXES_FAILURE_LIMIT + 1)
    ]

    assert answers[-2:] == [429, 429]


def test_behind_a_trusted_proxy_the_address_it_saw_counts_not_what_the_client_wrote(
    alice, settings
):
    settings.SLUICE_TRUSTED_PROXIES = ["10.0.0.0/8"]

    def through_proxy(n: int, password: str):
        # The client forges a fresh left-most hop each time; the proxy appends what it saw.
        return Client().post(
            "/login/",
            {"username": "alice", "password": password},
            REMOTE_ADDR="10.0.0.2",
            HTTP_X_FORWARDED_FOR=f"192.0.2.{n}, {ATTACKER}",
        )

    answers = [
        through_proxy(n, f"guess-{n}").status_code for n in range(settings.AXES_FAILURE_LIMIT)
    ]

    assert answers[-1] == 429
    assert AccessAttempt.objects.get().ip_address == ATTACKER
    assert through_proxy(99, PASSWORD).status_code == 429


def test_the_lock_ends_after_the_cool_off(alice, settings):
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT):
        sign_in(client, "/login/", f"guess-{n}")
    assert sign_in(client, "/login/", PASSWORD).status_code == 429

    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))

    assert sign_in(client, "/login/", PASSWORD).status_code == 302


def test_an_operator_unlocks_a_user_with_axes_reset_username(alice, settings):
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT):
        sign_in(client, "/admin/login/", f"guess-{n}")
    assert sign_in(client, "/admin/login/", PASSWORD).status_code == 429

    call_command("axes_reset_username", "alice", stdout=open("/dev/null", "w"))  # noqa: SIM115

    assert sign_in(client, "/admin/login/", PASSWORD).status_code == 302


def test_the_limit_and_cool_off_come_from_the_environment(tmp_path):
    probe = (
        "import json; from console import settings as s; print(json.dumps("
        "[s.AXES_FAILURE_LIMIT, s.AXES_COOLOFF_TIME.total_seconds(), s.AXES_LOCKOUT_PARAMETERS]))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
    env |= {
        "SLUICE_VAR_DIR": str(tmp_path),
        "SLUICE_LOGIN_FAILURE_LIMIT": "3",
        "SLUICE_LOGIN_COOLOFF_SECONDS": "60",
    }
    run = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )

    assert json.loads(run.stdout) == [3, 60.0, [["username", "ip_address"]]]


def test_the_test_clients_login_still_works_without_a_request(alice):
    """authenticate() without a request (Client.login, a shell) is not throttled: no address."""
    client = Client()

    assert client.login(username="alice", password=PASSWORD)


@pytest.mark.parametrize(
    ("trusted", "remote", "forwarded", "client"),
    [
        ([], ATTACKER, "192.0.2.1", ATTACKER),  # no proxy trusted: the header is ignored
        (["10.0.0.0/8"], "10.0.0.2", f"192.0.2.1, {ATTACKER}", ATTACKER),  # forged hop ignored
        (["10.0.0.0/8"], "10.0.0.2", f"{ATTACKER}, 10.0.0.9", ATTACKER),  # two proxies
        (["10.0.0.0/8"], "10.0.0.2", "not-an-ip, 10.0.0.9", "10.0.0.9"),
        (["*"], "172.16.5.5", f"192.0.2.1, {ATTACKER}", ATTACKER),  # "*": the peer, not hops
        (["10.0.0.0/8"], ATTACKER, "192.0.2.1", ATTACKER),  # not from a proxy
    ],
)
def test_the_client_address_is_the_nearest_hop_no_trusted_proxy_vouches_for(
    settings, rf, trusted, remote, forwarded, client
):
    settings.SLUICE_TRUSTED_PROXIES = trusted
    request = rf.post("/login/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)

    assert client_address(request) == client
