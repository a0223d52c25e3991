#!/usr/bin/env bash
# Run a PostgreSQL server in the FOREGROUND on 127.0.0.1 (for tests and local experiments).
#
# Env: PG_PORT (default 5432), PG_DATA_DIR (default ${SLUICE_VAR_DIR:-var}/postgres).
# The cluster is created on first use with a trusted superuser "sluice" (loopback only, no
# password): fine for tests, not for production. Runs as the "postgres" system user when
# started as root, because PostgreSQL refuses to run as root.
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"

PG_PORT="${PG_PORT:-5432}"
PG_DATA_DIR="$(abs_path "${PG_DATA_DIR:-${SLUICE_VAR_DIR:-var}/postgres}")"
BIN="$(compgen -G "/usr/lib/postgresql/*/bin" | sort -V | tail -n1 || true)"
[[ -x "$BIN/postgres" ]] || die "PostgreSQL server not found: run scripts/ensure-system.sh"

as_owner=()
if (( EUID == 0 )); then as_owner=(runuser -u postgres --); fi

mkdir -p "$PG_DATA_DIR"
if (( EUID == 0 )); then chown postgres: "$PG_DATA_DIR"; chmod 700 "$PG_DATA_DIR"; fi
if [[ ! -f "$PG_DATA_DIR/PG_VERSION" ]]; then
  "${as_owner[@]}" "$BIN/initdb" -D "$PG_DATA_DIR" -U sluice -A trust --no-sync -E UTF8 \
    >/dev/null
fi
exec "${as_owner[@]}" "$BIN/postgres" -D "$PG_DATA_DIR" -p "$PG_PORT" -h 127.0.0.1 \
  -k "$PG_DATA_DIR" -c fsync=off -c synchronous_commit=off -c full_page_writes=off
