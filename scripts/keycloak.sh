#!/usr/bin/env bash
# Run Keycloak, an OpenID Connect provider for single sign-on, in the FOREGROUND on 127.0.0.1:
# the identity provider of the sign-in tests (tests/e2e) and of a local try-out of SSO. It
# imports a realm on first start, says when that realm answers, and runs until stopped
# (SIGTERM or Ctrl-C stop Keycloak with it).
#
# Usage: scripts/keycloak.sh
#
# Env (all optional):
#   KEYCLOAK_PORT           its http port                                   (default 8180)
#   KEYCLOAK_DATA_DIR       this Keycloak's home: its H2 database, the realm it imported, logs
#                           (default $SLUICE_VAR_DIR/keycloak, i.e. var/keycloak; relative paths
#                           are taken from the repo root); delete it to start from scratch
#   KEYCLOAK_REALM_FILE     the realm to import (default tests/support/keycloak/sluice-realm.json:
#                           realm `sluice`, client `sluice-console`, users alice and bob in the
#                           groups /payments-editors and /ops-viewers)
#   KEYCLOAK_CONSOLE_URLS   comma-separated base URLs of the consoles allowed to sign in through
#                           the realm's `sluice-console` client: each one's /oidc/callback/ is a
#                           redirect URI, its /login/ a post-logout one (default http://127.0.0.1:8000)
#   KEYCLOAK_CLIENT_SECRET  that client's secret (default: the realm file's)
#   KEYCLOAK_START_TIMEOUT  seconds to wait for the realm to answer         (default 180)
#   KEYCLOAK_JAVA_OPTS      JVM options added to kc.sh's (default -XX:TieredStopAtLevel=1: a test
#                           provider starts in about half the time without the C2 compiler)
#
# Keycloak itself (the pinned keycloak-quarkus-dist, built once) is fetched into .cache/keycloak
# by scripts/fetch-jars.sh keycloak; every run has a home of its own under KEYCLOAK_DATA_DIR
# that links to it, so runs side by side never share a database.
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"

KEYCLOAK_PORT="${KEYCLOAK_PORT:-8180}"
KEYCLOAK_DATA_DIR="$(abs_path "${KEYCLOAK_DATA_DIR:-$VAR_DIR/keycloak}")"
KEYCLOAK_REALM_FILE="$(abs_path "${KEYCLOAK_REALM_FILE:-tests/support/keycloak/sluice-realm.json}")"
KEYCLOAK_CONSOLE_URLS="${KEYCLOAK_CONSOLE_URLS:-http://127.0.0.1:8000}"
KEYCLOAK_CLIENT_SECRET="${KEYCLOAK_CLIENT_SECRET:-}"
KEYCLOAK_START_TIMEOUT="${KEYCLOAK_START_TIMEOUT:-180}"
export JAVA_OPTS_APPEND="${KEYCLOAK_JAVA_OPTS--XX:TieredStopAtLevel=1}"
HOST=127.0.0.1

require_port "$KEYCLOAK_PORT" KEYCLOAK_PORT
[[ "$KEYCLOAK_START_TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "KEYCLOAK_START_TIMEOUT must be a positive integer"
[[ -f "$KEYCLOAK_REALM_FILE" ]] || die "KEYCLOAK_REALM_FILE $KEYCLOAK_REALM_FILE not found"
if port_in_use "$HOST" "$KEYCLOAK_PORT"; then
  die "port $KEYCLOAK_PORT on $HOST is taken (set KEYCLOAK_PORT)"
fi

"$ROOT/scripts/fetch-jars.sh" keycloak
dist="$(compgen -G "$ROOT/.cache/keycloak/keycloak-*/.stamp" | sort -V | tail -n1)"
dist="${dist%/.stamp}"
[[ -n "$dist" ]] || die "no Keycloak in .cache/keycloak (scripts/fetch-jars.sh keycloak)"

# This run's home: kc.sh and conf/ copied (kc.sh takes its home from where it lies), the
# built distribution's lib/, themes/ and providers/ linked, data/ its own.
home="$KEYCLOAK_DATA_DIR"
mkdir -p "$home/bin" "$home/data/import"
cp "$dist/bin/kc.sh" "$home/bin/kc.sh"
[[ -d "$home/conf" ]] || cp -r "$dist/conf" "$home/conf"
for part in lib themes providers; do ln -sfn "$dist/$part" "$home/$part"; done

# The realm, with this run's consoles and secret in its sign-in client.
realm="$(python3 - "$KEYCLOAK_REALM_FILE" "$home/data/import" "$KEYCLOAK_CONSOLE_URLS" "$KEYCLOAK_CLIENT_SECRET" <<'PY'
import json, sys
from pathlib import Path

source, import_dir, console_urls, secret = sys.argv[1:]
realm = json.loads(Path(source).read_text(encoding="utf-8"))
urls = [url.strip().rstrip("/") for url in console_urls.split(",") if url.strip()]
for client in realm.get("clients", []):
    if client.get("clientId") != "sluice-console":
        continue
    client["redirectUris"] = [f"{url}/oidc/callback/" for url in urls]
    client.setdefault("attributes", {})["post.logout.redirect.uris"] = "##".join(
        f"{url}/login/" for url in urls
    )
    if secret:
        client["secret"] = secret
Path(import_dir, f"{realm['realm']}.json").write_text(json.dumps(realm, indent=2), encoding="utf-8")
print(realm["realm"])
PY
)"

discovery="http://$HOST:$KEYCLOAK_PORT/realms/$realm/.well-known/openid-configuration"
started=$(date +%s)
log "starting Keycloak ($(basename "$dist")) on http://$HOST:$KEYCLOAK_PORT, realm $realm, home ${home#"$ROOT"/}"
# --cache=local: no cluster (Keycloak's default would open JGroups ports on every address).
"$home/bin/kc.sh" start --optimized \
  --http-enabled=true --http-host="$HOST" --http-port="$KEYCLOAK_PORT" \
  --hostname-strict=false --cache=local --import-realm &
kc_pid=$!
trap 'kill -TERM "$kc_pid" 2>/dev/null || true; wait "$kc_pid" 2>/dev/null || true; exit 143' TERM
trap 'kill -TERM "$kc_pid" 2>/dev/null || true; wait "$kc_pid" 2>/dev/null || true; exit 130' INT

# Ready when the realm's discovery document answers: the server is up and the realm imported.
until curl -fsS -o /dev/null --max-time 2 "$discovery" 2>/dev/null; do
  kill -0 "$kc_pid" 2>/dev/null || { wait "$kc_pid" || true; die "Keycloak exited before it was ready"; }
  (( $(date +%s) - started < KEYCLOAK_START_TIMEOUT )) \
    || { kill -TERM "$kc_pid"; wait "$kc_pid" || true; die "Keycloak not ready after ${KEYCLOAK_START_TIMEOUT}s"; }
  sleep 0.5
done
log "ready in $(( $(date +%s) - started ))s: issuer http://$HOST:$KEYCLOAK_PORT/realms/$realm"
wait "$kc_pid"
