#!/usr/bin/env bash
# Every check Sluice has: static checks (Python and the console's TypeScript), then pytest
# (unit, integration and the browser end-to-end tests).
# The test fixtures start their own Redis and Kafka on free loopback ports.
# Usage: scripts/test.sh [--lint-only] [pytest args…]
#
# Without arguments (make test) pytest runs as parts side by side, each its own process with its
# own SLUICE_VAR_DIR, Redis, Kafka and stack (the fixtures pick free ports) and its output in
# test-artifacts/pytest-<part>.log: much of the integration and browser tests' time is waiting
# (brokers, drivers, polling, Chromium), so on two cores the parts overlap instead of queueing.
# The parts:
#   "unit"        tests/unit but the console's, then the browser tests (tests/e2e);
#   "integration" every other folder under tests/ but tests/faults (the fault suite of
#                 `make fault-test`): a new folder lands here;
#   "console"     tests/unit/console on PostgreSQL, the production database. SQLite, the
#                 development database, is what the integration and browser stacks run on.
# The machine's two cores are busy all along: moving tests between parts changes little, and
# three stacks of Spark drivers at once (integration, browser, a world of their own) are
# slower than two.
# Together they are the whole suite. With arguments, one pytest runs them here, as asked.
#
# Coverage (the whole run only): line and branch, of the code the test processes of the unit
# and console parts run ([tool.coverage] in pyproject.toml; not the drivers, workers and
# stacks tests start, not the integration and browser tests, whose code runs in those). Each
# part writes its own data file; they are combined at the end into
# test-artifacts/coverage/ (html/, coverage.json) and a table per package is printed. Tracing
# costs the traced parts' Python about half again its CPU time (docs/development.md#coverage);
# SLUICE_COVERAGE=0 runs without it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
started=$(date +%s)

# Checks must not touch a developer's own var/ (database, checkpoints).
SLUICE_VAR_DIR="$(mktemp -d -t sluice-test-XXXXXX)"
export SLUICE_VAR_DIR
unset DATABASE_URL REDIS_URL SLUICE_KAFKA_BOOTSTRAP
artifacts="${SLUICE_TEST_ARTIFACTS:-$PWD/test-artifacts}"
mkdir -p "$artifacts"

step() { printf '\n== %s\n' "$*"; }

coverage_dir="$artifacts/coverage"
# pytest's arguments that trace a part's own process (into its COVERAGE_FILE; the reports
# are written once, from every part's data, at the end)
covered=(--cov --cov-report=)
[[ "${SLUICE_COVERAGE:-1}" != 0 ]] || covered=()

part_names=() part_pids=()
# run_part NAME COMMAND...: start a part of the suite in the background, output to its log.
run_part() {
  local name=$1
  shift
  mkdir -p "$SLUICE_VAR_DIR/$name"
  set -m  # the part is a process group of its own: stop_parts signals all of it
  (
    export SLUICE_VAR_DIR="$SLUICE_VAR_DIR/$name"
    part_started=$(date +%s)
    rc=0
    "$@" >"$artifacts/pytest-$name.log" 2>&1 </dev/null || rc=$?
    # CPU seconds of what the part ran (pytest and the services it started and stopped)
    times >"$SLUICE_VAR_DIR/times"  # (not in a pipe: a subshell has no children's times)
    cpu=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); n += t[1] * 60 + t[2] }; printf "%d", n }' "$SLUICE_VAR_DIR/times")
    printf '\n[%s] exit %s after %ss (%ss of CPU)\n' "$name" "$rc" "$(( $(date +%s) - part_started ))" \
      "$cpu" >>"$artifacts/pytest-$name.log"
    exit "$rc"
  ) &
  set +m
  part_names+=("$name")
  part_pids+=($!)
  printf '  pytest part %-12s started, log: %s\n' "$name" "${artifacts#"$PWD"/}/pytest-$name.log"
}
# A failed check, Ctrl-C or a kill stops the parts still running as Ctrl-C stops pytest (its
# fixtures stop the services they started).
stop_parts() { for pid in "${part_pids[@]}"; do kill -INT -- "-$pid" 2>/dev/null || true; done; }
trap 'stop_parts; wait; rm -rf "$SLUICE_VAR_DIR"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The console's tests on a throwaway PostgreSQL (scripts/postgres.sh), the production
# database: its bulk writes, row locks, migrations.
console_on_postgres() (
  pg_dir="$(mktemp -d -t sluice-pg-XXXXXX)"  # reachable by the postgres user
  pg_port="$(python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  PG_PORT="$pg_port" PG_DATA_DIR="$pg_dir" setsid bash scripts/postgres.sh >"$artifacts/postgres.log" 2>&1 &
  pg_pid=$!
  trap 'kill -TERM -- "-$pg_pid" 2>/dev/null || true; wait "$pg_pid" 2>/dev/null || true; rm -rf "$pg_dir"' EXIT
  # An open port is not a ready server ("the database system is starting up"): pg_isready
  # answers "accepting connections" only once a session can start.
  pg_bin="$(compgen -G "/usr/lib/postgresql/*/bin" | sort -V | tail -n1)"
  for _ in $(seq 120); do
    "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port" -t 1 && break
    sleep 0.5
  done
  if ! "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port" -t 1; then
    echo "PostgreSQL did not start; see $artifacts/postgres.log" >&2
    exit 1
  fi
  DATABASE_URL="postgres://sluice@127.0.0.1:${pg_port}/postgres" \
    COVERAGE_FILE="$coverage_dir/.coverage.console" \
    python -m pytest tests/unit/console -p no:cacheprovider --durations=15 "${covered[@]}"
)

# The unit tests (they need nothing the static checks make: they start first), then the
# browser tests (tests/e2e: a stack of their own, and the frontend the static checks build),
# beside tests/integration: the two halves of the stack-heavy tests overlap.
frontend_built="$SLUICE_VAR_DIR/frontend-built"
unit_then_browser() {
  local rc=0
  COVERAGE_FILE="$coverage_dir/.coverage.unit" \
    python -m pytest tests/unit --ignore=tests/unit/console --durations=25 "${covered[@]}" || rc=$?
  printf '\n== the browser tests (tests/e2e)\n'
  while [[ ! -e "$frontend_built" ]]; do sleep 2; done
  python -m pytest tests/e2e --durations=15 || rc=$?
  return "$rc"
}

if [[ $# -eq 0 ]]; then
  rm -rf "$coverage_dir" && mkdir -p "$coverage_dir"
  step "pytest (the unit part starts now, the others after the static checks)"
  run_part unit unit_then_browser
fi

step "ruff (lint and format)"
ruff check .
ruff format --check .

step "import-linter (layer contracts)"
lint-imports

step "mypy (types)"
mypy  # the packages and the strict settings of [tool.mypy] in pyproject.toml

step "console frontend (build, tsc, ESLint, Prettier, Vitest)"
bash scripts/frontend.sh --check
touch "$frontend_built"

step "Django system checks and migrations"
python manage.py check --fail-level WARNING
python manage.py makemigrations --check --dry-run

step "the manual (mkdocs build --strict: links, anchors, generated reference pages)"
bash scripts/docs.sh build

if [[ "${1:-}" == "--lint-only" ]]; then exit 0; fi

step "pytest"
status=0
if [[ $# -gt 0 ]]; then
  python -m pytest "$@" || status=$?
else
  run_part integration python -m pytest tests --ignore=tests/unit --ignore=tests/e2e \
    --ignore=tests/faults --durations=25
  run_part console console_on_postgres

  failed=()
  for i in "${!part_pids[@]}"; do
    name=${part_names[$i]}
    rc=0
    wait "${part_pids[$i]}" || rc=$?
    log="$artifacts/pytest-$name.log"
    summary="$(grep -E '([0-9]+ (passed|failed|errors?)|no tests ran).* in [0-9.]+s' "$log" |
      tr -d '=' | sed 's/^ *//; s/ *$//' | paste -sd ';' | sed 's/;/; /g' || true)"
    printf '  pytest part %-12s %s: %s\n' "$name" "$(tail -1 "$log" | sed 's/^\[[^]]*\] //')" "$summary"
    if [[ $rc -ne 0 ]]; then failed+=("$name"); status=1; fi
  done
  part_pids=()
  for name in "${failed[@]}"; do
    step "FAILED: pytest part $name, its log (${artifacts#"$PWD"/}/pytest-$name.log):"
    cat "$artifacts/pytest-$name.log"
  done
fi

# coverage_report: combine the parts' data, write the reports, print the table per package.
coverage_report() {
  local data="$coverage_dir/.coverage"
  coverage combine -q --data-file="$data" "$coverage_dir" &&
    coverage html -q --data-file="$data" -d "$coverage_dir/html" &&
    coverage json -q --data-file="$data" -o "$coverage_dir/coverage.json" &&
    python scripts/coverage_summary.py "$coverage_dir/coverage.json" | tee "$coverage_dir/summary.md"
}
if [[ $# -eq 0 && ${#covered[@]} -gt 0 ]]; then
  step "coverage (line and branch of the unit and console parts; report: ${coverage_dir#"$PWD"/}/html/index.html)"
  coverage_report || echo "no coverage report: see the output above" >&2
fi

printf '\nmake test took %ss\n' "$(( $(date +%s) - started ))"
exit "$status"
