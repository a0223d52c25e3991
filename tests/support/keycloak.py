"""Keycloak, the OpenID Connect provider of the sign-in tests (scripts/keycloak.sh), as a
process of the test session with the realm of tests/support/keycloak/sluice-realm.json.

:func:`start_keycloak` returns at once: Keycloak takes a while to start, so the browser tests'
stack starts meanwhile (it needs only Keycloak's address, as the console reads the provider's
discovery document at the first sign-on), and the tests that sign in wait for it
(:meth:`Keycloak.wait_ready`).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import requests

from tests.support.processes import Service, free_port, start_service

REALM = "sluice"
CLIENT_ID = "sluice-console"
#: The realm's client the tests manage users with (a service account holding realm-management's
#: manage-users): never the console's.
ADMIN_CLIENT = ("sluice-tests-admin", "sluice-tests-admin-secret")
#: The realm's users: password and the groups the ID token lists for them (full paths).
USERS = {
    "alice": ("alice-password", ["/payments-editors", "/ops-viewers"]),
    "bob": ("bob-password", ["/ops-viewers"]),
}


@dataclass
class Keycloak:
    service: Service
    port: int
    client_secret: str
    started_at: float

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}/realms/{REALM}"

    def console_env(self) -> dict[str, str]:
        """What a console needs to sign in through this Keycloak (SLUICE_OIDC_*)."""
        return {
            "SLUICE_OIDC_ISSUER": self.issuer,
            "SLUICE_OIDC_CLIENT_ID": CLIENT_ID,
            "SLUICE_OIDC_CLIENT_SECRET": self.client_secret,
            "SLUICE_OIDC_PROVIDER_NAME": "Keycloak",
        }

    def ready(self) -> bool:
        try:
            url = f"{self.issuer}/.well-known/openid-configuration"
            return requests.get(url, timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def wait_ready(self, timeout: float = 240) -> float:
        """Wait until the realm answers; the seconds since Keycloak was started. Fails with
        its log when it exits or does not get there in ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not self.ready():
            if not self.service.alive():
                raise RuntimeError(f"Keycloak exited:\n{self.service.log_tail(60)}")
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"Keycloak not ready after {timeout:.0f} s:\n{self.service.log_tail(60)}"
                )
            time.sleep(0.5)
        return time.monotonic() - self.started_at

    def leave_group(self, username: str, group: str) -> None:
        """Take ``username`` out of ``group`` (a full path) in the realm, as the company's
        identity team would: through Keycloak's admin REST API."""
        admin = f"http://127.0.0.1:{self.port}/admin/realms/{REALM}"
        token = requests.post(
            f"{self.issuer}/protocol/openid-connect/token",
            data={"grant_type": "client_credentials"},
            auth=ADMIN_CLIENT,
            timeout=10,
        )
        token.raise_for_status()
        headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
        users = requests.get(
            f"{admin}/users",
            params={"username": username, "exact": "true"},
            headers=headers,
            timeout=10,
        )
        users.raise_for_status()
        (user,) = users.json()
        groups = requests.get(f"{admin}/users/{user['id']}/groups", headers=headers, timeout=10)
        groups.raise_for_status()
        (held,) = [g for g in groups.json() if g["path"] == group]
        left = requests.delete(
            f"{admin}/users/{user['id']}/groups/{held['id']}", headers=headers, timeout=10
        )
        left.raise_for_status()


def start_keycloak(data_dir: Path, log_dir: Path, console_urls: list[str]) -> Keycloak:
    """scripts/keycloak.sh on a free loopback port, its home in ``data_dir``, letting the
    consoles at ``console_urls`` sign in (their callbacks are the client's redirect URIs),
    with a client secret of this session's own."""
    port = free_port()
    secret = secrets.token_urlsafe(24)
    service = start_service(
        "keycloak",
        ["bash", "scripts/keycloak.sh"],
        log_dir,
        {
            "KEYCLOAK_PORT": str(port),
            "KEYCLOAK_DATA_DIR": str(data_dir),
            "KEYCLOAK_CONSOLE_URLS": ",".join(console_urls),
            "KEYCLOAK_CLIENT_SECRET": secret,
        },
    )
    return Keycloak(service, port, secret, time.monotonic())
