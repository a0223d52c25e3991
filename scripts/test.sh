#!/usr/bin/env bash
# Every check Sluice has: static checks, then pytest (unit + integration).
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

step "Django system checks and migrations"
python manage.py check --fail-level WARNING
python manage.py makemigrations --check --dry-run

if [[ "${1:-}" == "--lint-only" ]]; then exit 0; fi

step "pytest"
status=0
python -m pytest "$@" || status=$?
printf '\nmake test took %ss\n' "$(( $(date +%s) - started ))"
exit "$status"
