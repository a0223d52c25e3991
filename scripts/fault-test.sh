#!/usr/bin/env bash
# make fault-test: the fault suite (tests/faults) on real processes, as root.
#
# What it starts (the fixtures of tests/faults/conftest.py; all removed at the end, also on a
# failure or Ctrl-C): a bridge `slf-br0` with 10.231.77.1/24 and one network namespace per
# runtime host (`slf-h1`, `slf-h2`, … on 10.231.77.11, .12, …, no default route), a
# three-broker KRaft Kafka and a Redis listening on 127.0.0.1 and the bridge address only,
# the console's web, Celery worker and beat on this machine, and a runtime worker with its
# Spark drivers inside each namespace. Nothing sends traffic beyond loopback and that /24.
#
# `make fault-test` installs what is missing first (make install: Debian packages, among them
# iproute2, iptables and libfaketime, the venv, the jars). Logs go to test-artifacts/faults/, pytest's
# output to test-artifacts/pytest-faults.log as well as the terminal.
#
# Usage: scripts/fault-test.sh [pytest args…]     (default: all of tests/faults)
# Env:   FAULT_TEST_TIMEOUT  seconds the whole suite may take (default 2100)
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"

(( EUID == 0 )) || die "the fault suite needs root (network namespaces, veths, iptables)"
export PATH="$ROOT/.venv/bin:$PATH"

SLUICE_VAR_DIR="$(mktemp -d -t sluice-faults-XXXXXX)"
export SLUICE_VAR_DIR
unset DATABASE_URL REDIS_URL SLUICE_KAFKA_BOOTSTRAP
artifacts="${SLUICE_TEST_ARTIFACTS:-$ROOT/test-artifacts}"
mkdir -p "$artifacts"
trap 'rm -rf "$SLUICE_VAR_DIR"' EXIT

started=$SECONDS
status=0
args=("$@")
(( ${#args[@]} )) || args=(tests/faults)
timeout --signal=INT --kill-after=60 "${FAULT_TEST_TIMEOUT:-2100}" \
  python -m pytest -m faults -s -p no:cacheprovider --durations=10 "${args[@]}" \
  2>&1 | tee "$artifacts/pytest-faults.log" || status=$?
log "the fault suite took $((SECONDS - started)) s (exit $status)"
exit "$status"
