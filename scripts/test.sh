#!/usr/bin/env bash
# Every check Sluice has: static checks (Python and the console's TypeScript), then pytest
# (unit, integration and the browser end-to-end tests).
# The test fixtures start their own Redis and Kafka on free loopback ports.
# Usage: scripts/test.sh [--lint-only] [pytest args…]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
started=$(date +%s)

# Checks must not touch a developer's own var/ (database, checkpoints).
SLUICE_VAR_DIR="$(mktemp -d -t sluice-test-XXXXXX)"
export SLUICE_VAR_DIR
trap 'rm -rf "$SLUICE_VAR_DIR"' EXIT
unset DATABASE_URL REDIS_URL SLUICE_KAFKA_BOOTSTRAP

step() { printf '\n== %s\n' "$*"; }

step "ruff (lint and format)"
ruff check .
ruff format --check .

step "import-linter (layer contracts)"
lint-imports

step "mypy (types)"
mypy  # the packages and the strict settings of [tool.mypy] in pyproject.toml

step "console frontend (build, tsc, ESLint, Vitest)"
bash scripts/frontend.sh --check

step "Django system checks and migrations"
python manage.py check --fail-level WARNING
python manage.py makemigrations --check --dry-run

step "the manual (mkdocs build --strict: links, anchors, generated reference pages)"
bash scripts/docs.sh build

if [[ "${1:-}" == "--lint-only" ]]; then exit 0; fi

step "pytest"
status=0
python -m pytest "$@" || status=$?

# The console's database code (bulk writes, row locks, migrations) once more on PostgreSQL,
# the production database; only when the whole suite was asked for.
if [[ $# -eq 0 ]]; then
  step "console tests on PostgreSQL"
  artifacts="${SLUICE_TEST_ARTIFACTS:-$PWD/test-artifacts}"
  mkdir -p "$artifacts"
  pg_dir="$(mktemp -d -t sluice-pg-XXXXXX)"
  pg_port="$(python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  PG_PORT="$pg_port" PG_DATA_DIR="$pg_dir" setsid bash scripts/postgres.sh >"$artifacts/postgres.log" 2>&1 &
  pg_pid=$!
  stop_pg() { kill -TERM -- "-$pg_pid" 2>/dev/null || true; wait "$pg_pid" 2>/dev/null || true; rm -rf "$pg_dir"; }
  trap 'stop_pg; rm -rf "$SLUICE_VAR_DIR"' EXIT
  if bash scripts/wait-for-port.sh 127.0.0.1 "$pg_port" 60; then
    DATABASE_URL="postgres://sluice@127.0.0.1:${pg_port}/postgres" \
      python -m pytest tests/unit/console -q -p no:cacheprovider || status=$?
  else
    echo "PostgreSQL did not start; see $artifacts/postgres.log" >&2
    status=1
  fi
fi

printf '\nmake test took %ss\n' "$(( $(date +%s) - started ))"
exit "$status"
