#!/usr/bin/env bash
# The fast tier (make check), run before each commit: ruff, the import contracts, mypy,
# Django's checks, the console's tsc, ESLint, Prettier and Vitest, and the unit tests that need no
# service (pytest --no-services, on every core with pytest-xdist). Nothing is started: no
# Redis, Kafka, PostgreSQL, VictoriaMetrics or Spark JVM. A test that needs one is left out
# by its marker (tests/conftest.py gives each test the markers of the services its fixtures
# start); one that tries to start a service anyway fails at once, and one that hangs fails
# after CHECK_TIMEOUT seconds. `make test` (scripts/test.sh) runs everything, before a merge.
#
# The unit tests start first, in the background (some of their time is waiting: refused
# connections, subprocesses), beside the static checks; their output goes to
# test-artifacts/check-pytest.log. Each step's wall time is printed at the end.
# Usage: scripts/check.sh [pytest args…]   (e.g. -x, or -k to narrow the unit tests)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"

# Checks must not touch a developer's own var/ (database, checkpoints).
SLUICE_VAR_DIR="$(mktemp -d -t sluice-check-XXXXXX)"
export SLUICE_VAR_DIR
unset DATABASE_URL REDIS_URL SLUICE_KAFKA_BOOTSTRAP
artifacts="${SLUICE_TEST_ARTIFACTS:-$PWD/test-artifacts}"
mkdir -p "$artifacts"
pytest_log="$artifacts/check-pytest.log"

now() { date +%s%N; }
started=$(now)
timings=()
# step NAME COMMAND...: run a check, note its wall time; a failure ends the run (set -e).
step() {
  local name=$1 began
  shift
  printf '\n== %s\n' "$name"
  began=$(now)
  "$@"
  timings+=("$(printf '%-40s %6.1f s' "$name" "$(( $(now) - began ))e-9")")
}

pytest_pid=""
# A failed step stops the unit tests: SIGTERM (a background job of a script ignores SIGINT),
# with nothing to clean up (they started no service).
stop_pytest() { [[ -n "$pytest_pid" ]] && kill -TERM -- "-$pytest_pid" 2>/dev/null || true; }
trap 'stop_pytest; wait; rm -rf "$SLUICE_VAR_DIR"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

printf '== unit tests without services (pytest --no-services -n %s), log: %s\n' \
  "${CHECK_WORKERS:-auto}" "${pytest_log#"$PWD"/}"
pytest_began=$(now)
set -m  # pytest is a process group of its own: stop_pytest stops its workers too
python -m pytest tests/unit --no-services -n "${CHECK_WORKERS:-auto}" \
  --timeout="${CHECK_TIMEOUT:-120}" -q -p no:cacheprovider --durations=10 "$@" \
  >"$pytest_log" 2>&1 </dev/null &
pytest_pid=$!
set +m

step "ruff (lint and format)" bash -c 'ruff check . && ruff format --check .'
step "import-linter (layer contracts)" lint-imports
step "mypy (types)" mypy
step "Django system checks and migrations" bash -c \
  'python manage.py check --fail-level WARNING && python manage.py makemigrations --check --dry-run'
# The console's packages (npm ci) on a fresh clone or after the lock file changed (the stamp
# scripts/frontend.sh leaves in node_modules); nothing to do once they are there.
lock_stamp="frontend/node_modules/.sluice-lock-$(sha1sum frontend/package-lock.json | cut -c1-12)"
[[ -e "$lock_stamp" ]] || step "console: packages and build" bash scripts/frontend.sh
step "console: tsc --noEmit" bash -c 'cd frontend && npx --no-install tsc --noEmit'
step "console: ESLint" bash -c 'cd frontend && npm run --silent lint'
step "console: Prettier" bash -c 'cd frontend && npm run --silent format:check'
step "console: Vitest" bash -c 'cd frontend && npx --no-install vitest run --reporter=dot'

printf '\n== unit tests without services (waiting for them)\n'
status=0
wait "$pytest_pid" || status=$?
pytest_pid=""
timings+=("$(printf '%-40s %6.1f s' "unit tests (pytest -n ${CHECK_WORKERS:-auto})" \
  "$(( $(now) - pytest_began ))e-9")")
if [[ $status -ne 0 ]]; then
  cat "$pytest_log"
else
  grep -E '^[0-9]+ (passed|failed)|(passed|failed).* in [0-9.]+s' "$pytest_log" | tail -n1
fi

printf '\n== times (wall clock; the unit tests ran beside the other steps)\n'
printf '  %s\n' "${timings[@]}"
printf '  %-40s %6.1f s\n' "make check" "$(( $(now) - started ))e-9"
exit "$status"
