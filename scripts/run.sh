#!/usr/bin/env bash
# Start the embedded Sluice stack in the foreground under honcho (Procfile).
# Ctrl-C stops every process it started. Called by `make run` after `make install`.
# Usage: scripts/run.sh [--prepare]
#   --prepare  only prepare the database (migrations, static files, the admin, the demo) and
#              exit: `make run` does it while the jars build, then runs this script with
#              SLUICE_PREPARED=1, which skips that step.
set -euo pipefail
cd "$(dirname "$0")/.."
prepare_only=0
case "${1:-}" in
  --prepare) prepare_only=1 ;;
  "") ;;
  *) echo "unknown argument '$1' (scripts/run.sh [--prepare])" >&2; exit 2 ;;
esac

export SLUICE_VAR_DIR="${SLUICE_VAR_DIR:-$PWD/var}"
export SLUICE_PORT="${SLUICE_PORT:-8000}"
mkdir -p "$SLUICE_VAR_DIR"
[[ -n "${SLUICE_FILES_ROOTS:-}" ]] || mkdir -p data  # the default files root (pipelines/spec/paths.py)
PY=.venv/bin/python

# Embedded Redis and Kafka unless the environment points at existing ones.
processes=(web celery beat runtime)
# The channels' history: an embedded VictoriaMetrics scraping /metrics, unless SLUICE_HISTORY_URL
# points at an existing store. The scraper needs a bearer token for /metrics: one is made (and
# kept in var/) when SLUICE_METRICS_TOKEN is unset.
if [[ -z "${SLUICE_HISTORY_URL:-}" ]]; then
  processes=(history "${processes[@]}")
  if [[ -z "${SLUICE_METRICS_TOKEN:-}" ]]; then
    token_file="$SLUICE_VAR_DIR/metrics-token"
    [[ -s "$token_file" ]] || (umask 077; .venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(32))' >"$token_file")
    SLUICE_METRICS_TOKEN="$(cat "$token_file")"
    export SLUICE_METRICS_TOKEN
  fi
fi
if [[ -z "${REDIS_URL:-}" ]]; then processes=(redis "${processes[@]}"); fi
if [[ -z "${SLUICE_KAFKA_BOOTSTRAP:-}" ]]; then processes=(kafka "${processes[@]}"); fi

if (echo >"/dev/tcp/127.0.0.1/$SLUICE_PORT") 2>/dev/null; then
  echo "Port $SLUICE_PORT is already in use: is Sluice already running? (set SLUICE_PORT to move it)" >&2
  exit 1
fi

# What ensure_admin says on a first run (the admin's password) waits here, readable by root
# alone, when the database was prepared beforehand (--prepare), for the ready banner.
note_file="$SLUICE_VAR_DIR/.admin-note"
if [[ "${SLUICE_PREPARED:-}" == "1" ]]; then
  admin_note="$(cat "$note_file" 2>/dev/null || true)"
  rm -f "$note_file"
else
  echo "Preparing the database…"
  $PY manage.py migrate --noinput -v 0
  $PY manage.py collectstatic --noinput -v 0
  admin_note="$($PY manage.py ensure_admin)"
  if [[ "${SLUICE_SEED_DEMO:-true}" == "true" ]]; then $PY manage.py seed_demo; fi
  if (( prepare_only )); then
    (umask 077; printf '%s' "$admin_note" >"$note_file")
    exit 0
  fi
fi

# Least privilege: started as root, the runtime worker (and so every Spark driver) drops to
# the unprivileged user sluice (made by scripts/ensure-system.sh), if it can reach this checkout.
if (( EUID == 0 )) && [[ -z "${SLUICE_RUNTIME_USER:-}" ]] && id sluice >/dev/null 2>&1; then
  if runuser -u sluice -- test -r "$PWD/manage.py" -a -x "$PWD/.venv/bin/python"; then
    export SLUICE_RUNTIME_USER=sluice
    if [[ -z "${SLUICE_FILES_ROOTS:-}" ]]; then
      mkdir -p data && chown -R sluice:sluice data  # the default files root, Sluice's own
    fi
  else
    echo "WARNING: the user sluice cannot read $PWD: Spark drivers will run as root" >&2
  fi
fi

url="http://127.0.0.1:${SLUICE_PORT}/"
kafka_port="${KAFKA_PORT:-9092}"
# The console writes events posted over HTTP (http sources) to the embedded broker.
if [[ " ${processes[*]} " == *" kafka "* ]]; then export SLUICE_KAFKA_BOOTSTRAP="127.0.0.1:$kafka_port"; fi
ready() {
  curl -fsS "${url}healthz" >/dev/null 2>&1 || return 1
  if [[ " ${processes[*]} " == *" kafka "* ]]; then
    (echo >"/dev/tcp/127.0.0.1/$kafka_port") 2>/dev/null || return 1
  fi
}
(
  for _ in $(seq 1 240); do
    if ready; then
      printf '\n========================================================================\n'
      printf ' Sluice console: %s   (admin: %sadmin/, API docs: %sapi/docs/)\n' "$url" "$url" "$url"
      printf ' Log in as "admin". %s\n' "${admin_note:-Password: from SLUICE_ADMIN_PASSWORD, or the one printed on the first run.}"
      printf ' Stop everything with Ctrl-C.\n'
      printf '========================================================================\n\n'
      exit 0
    fi
    sleep 0.5
  done
  echo "The console or Kafka did not answer within 2 minutes; see the logs above." >&2
) &

exec .venv/bin/honcho start -f Procfile "${processes[@]}"
