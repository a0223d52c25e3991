"""Single sign-on's claim handling (console.oidc.identity_from_claims, sign_in_groups): what an
identity provider says about a user is bounded before it reaches the user records, and a
groups claim that is not a list of group names refuses the sign-on with a reason."""

from __future__ import annotations

import pytest

from console.errors import SignOnRefused
from console.oidc import (
    MAX_GROUP_LENGTH,
    MAX_GROUPS,
    MAX_NAME_LENGTH,
    identity_from_claims,
    sign_in_groups,
)

ISSUER = "https://sso.example.test/realms/acme"


def identity(**claims):
    return identity_from_claims(
        {"sub": "f81d4fae-7dec-11d0-a765-00a0c91e6bf6", **claims},
        issuer=ISSUER,
        groups_claim="groups",
    )


def test_a_complete_set_of_claims():
    found = identity(
        preferred_username="alice",
        email="alice@example.com",
        given_name="Alice",
        family_name="Payments",
        groups=["/payments-editors", "/ops-viewers"],
    )

    assert found.issuer == ISSUER
    assert found.subject == "f81d4fae-7dec-11d0-a765-00a0c91e6bf6"
    assert (found.username, found.email) == ("alice", "alice@example.com")
    assert (found.first_name, found.last_name) == ("Alice", "Payments")
    assert found.groups == ["/payments-editors", "/ops-viewers"]


def test_only_a_subject_is_required():
    found = identity()

    assert (found.username, found.email, found.first_name, found.last_name) == ("", "", "", "")
    assert found.groups == []


@pytest.mark.parametrize("subject", [None, "", 42, ["a"], "s" * 256])
def test_no_usable_subject_is_refused(subject):
    with pytest.raises(SignOnRefused, match="no usable subject"):
        identity_from_claims({"sub": subject}, issuer=ISSUER, groups_claim="groups")


@pytest.mark.parametrize(
    ("given", "username"),
    [
        ("bob", "bob"),
        ("  bob  ", "bob"),
        ("Bob Smith", "Bob-Smith"),
        ("bob@example.com", "bob@example.com"),
        ("<script>", "script"),
        ("ünïcödé", "ünïcödé"),
        ("x" * 400, "x" * MAX_NAME_LENGTH),
        ("!!!", ""),
        (12, ""),
        (None, ""),
    ],
)
def test_the_user_name_is_made_safe_and_bounded(given, username):
    assert identity(preferred_username=given).username == username


@pytest.mark.parametrize(
    "email",
    ["not an address", "a@b@c", 7, ["a@example.com"], "a" * 250 + "@example.com"],
)
def test_an_unusable_email_is_left_out(email):
    assert identity(email=email).email == ""


def test_names_lose_control_characters_and_are_cut():
    found = identity(given_name="Al\x00ice\n", family_name="P" * 500)

    assert found.first_name == "Alice"
    assert found.last_name == "P" * MAX_NAME_LENGTH


def test_groups_keep_their_order_once_each():
    assert sign_in_groups({"groups": ["/b", "/a", "/b"]}, "groups") == ["/b", "/a"]


def test_the_groups_claim_is_the_configured_one():
    claims = {"groups": ["/ignored"], "roles": ["/payments-editors"]}

    assert sign_in_groups(claims, "roles") == ["/payments-editors"]
    assert sign_in_groups(claims, "teams") == []  # missing: no groups


@pytest.mark.parametrize("value", ["/payments-editors", {"/payments-editors": True}, 3, True])
def test_groups_not_a_list_are_refused_with_the_reason(value):
    with pytest.raises(SignOnRefused) as refused:
        identity(groups=value)

    assert "'groups' claim is not a list of group names" in str(refused.value)
    assert "group mapper" in str(refused.value)


@pytest.mark.parametrize(
    "item", [None, 5, ["/nested"], {"name": "/a"}, "", "   ", "x" * (MAX_GROUP_LENGTH + 1), "a\nb"]
)
def test_an_item_that_is_not_a_group_name_refuses_the_sign_on(item):
    with pytest.raises(SignOnRefused, match="not a group name"):
        identity(groups=["/ops-viewers", item])


def test_too_many_groups_are_refused():
    with pytest.raises(SignOnRefused, match=f"more than {MAX_GROUPS} groups"):
        identity(groups=[f"/g{n}" for n in range(MAX_GROUPS + 1)])

    assert len(identity(groups=[f"/g{n}" for n in range(MAX_GROUPS)]).groups) == MAX_GROUPS
