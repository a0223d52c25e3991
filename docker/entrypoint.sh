#!/usr/bin/env bash
# Entrypoint of the Sluice image (docker/Dockerfile): the first argument is the role.
#
#   web              migrate, ensure_admin (only when SLUICE_ADMIN_PASSWORD is set), seed_demo
#                    (only when SLUICE_SEED_DEMO=true), then gunicorn on 0.0.0.0:${SLUICE_PORT:-8000}
#   celery-worker    the control loop's Celery worker (any number of them)
#   celery-beat      the control loop's scheduler (exactly one)
#   runtime-worker   python -m runtime_adapter.host.worker (set SLUICE_WORKER_ID, SLUICE_DRIVER_HOST)
#   spark-master     a Spark standalone master / worker from the image's own pyspark, as
#   spark-worker     docker/compose.yaml runs them: the same Spark, Java, Python and code as the
#                    drivers, which the http sink needs (SPARK_MASTER, SPARK_WORKER_CORES/_MEMORY)
#   history          VictoriaMetrics (scripts/victoriametrics.sh) on 0.0.0.0:8428, the channels'
#                    time-series store: scrapes SLUICE_HISTORY_SCRAPE_TARGET's /metrics every 10 s
#                    with SLUICE_METRICS_TOKEN, keeps SLUICE_HISTORY_RETENTION in $VAR_DIR/history
#   manage ARGS      python manage.py ARGS (e.g. `manage changepassword admin`)
#   healthcheck ROLE exit 0 when ROLE is healthy here (web: GET /healthz; runtime-worker: its
#                    heartbeat in Redis is fresh; history: GET /health); used by docker/compose.yaml
#   anything else    run as a command (e.g. `bash`)
#
# Extra arguments after a role are passed on to its program.
set -euo pipefail

VAR_DIR="${SLUICE_VAR_DIR:-/var/lib/sluice}"
MANAGE=(python /app/manage.py)
# Work from the writable data dir: Spark drivers inherit the working directory and may create
# spark-warehouse/ there, and /app belongs to root.
cd "$VAR_DIR"

log() { printf '==> entrypoint: %s\n' "$*" >&2; }

web_port="${SLUICE_PORT:-8000}"

healthcheck() {
  case "${1:-}" in
    web)
      exec python - "$web_port" <<'PY'
import sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/healthz", timeout=5) as answer:
    sys.exit(0 if answer.status == 200 else 1)
PY
      ;;
    runtime-worker)
      exec python - <<'PY'
import json, os, socket, sys, time
import redis
from runtime_adapter.config import RuntimeConfig
config = RuntimeConfig.from_env()
raw = redis.Redis.from_url(config.redis_url, socket_timeout=5).hget(
    f"{config.key_prefix}:workers", config.worker_id)
if raw is None:
    sys.exit(f"no heartbeat from {config.worker_id}")
age = time.time() - json.loads(raw)["last_heartbeat"]
timeout = float(os.environ.get("SLUICE_WORKER_SESSION_TIMEOUT") or 10)
sys.exit(0 if age < timeout else f"heartbeat of {config.worker_id} is {age:.0f}s old")
PY
      ;;
    history)
      exec python - "${SLUICE_HISTORY_PORT:-8428}" <<'PY'
import sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=5) as answer:
    sys.exit(0 if answer.status == 200 else 1)
PY
      ;;
    *) echo "healthcheck: unknown role '${1:-}' (web, runtime-worker, history)" >&2; exit 2 ;;
  esac
}

role="${1:-web}"
[[ $# -gt 0 ]] && shift

case "$role" in
  web)
    log "applying database migrations"
    "${MANAGE[@]}" migrate --noinput
    if [[ -n "${SLUICE_ADMIN_PASSWORD:-}" ]]; then
      "${MANAGE[@]}" ensure_admin
    else
      log "SLUICE_ADMIN_PASSWORD is not set: no admin user is created (create one with" \
          "'docker compose exec web /app/docker/entrypoint.sh manage createsuperuser')"
    fi
    if [[ "${SLUICE_SEED_DEMO:-false}" == "true" ]]; then
      "${MANAGE[@]}" seed_demo
    fi
    log "starting gunicorn on 0.0.0.0:$web_port"
    exec gunicorn console.wsgi:application --config /app/console/gunicorn.conf.py \
      --bind "0.0.0.0:$web_port" \
      --workers "${GUNICORN_WORKERS:-2}" --threads "${GUNICORN_THREADS:-4}" \
      --graceful-timeout 10 --access-logfile - "$@"
    ;;
  celery-worker)
    exec celery -A console worker --loglevel "${SLUICE_LOG_LEVEL:-INFO}" \
      --concurrency "${CELERY_CONCURRENCY:-2}" --without-gossip --without-mingle "$@"
    ;;
  celery-beat)
    exec celery -A console beat --loglevel "${SLUICE_LOG_LEVEL:-INFO}" \
      --schedule "$VAR_DIR/celerybeat-schedule" "$@"
    ;;
  runtime-worker)
    log "runtime worker ${SLUICE_WORKER_ID:-$(hostname)}, Spark master ${SPARK_MASTER:-local[*]}," \
        "driver host ${SLUICE_DRIVER_HOST:-auto}, checkpoints ${SLUICE_CHECKPOINT_ROOT:-$VAR_DIR/checkpoints}"
    exec python -m runtime_adapter.host.worker "$@"
    ;;
  spark-master)
    spark_home="$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
    exec "$spark_home/bin/spark-class" org.apache.spark.deploy.master.Master \
      --host "${SPARK_MASTER_HOST:-$(hostname)}" --port "${SPARK_MASTER_PORT:-7077}" \
      --webui-port "${SPARK_MASTER_WEBUI_PORT:-8080}" "$@"
    ;;
  spark-worker)
    spark_home="$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
    : "${SPARK_MASTER:?spark-worker needs SPARK_MASTER=spark://host:7077}"
    mkdir -p "$VAR_DIR/spark-work"
    exec "$spark_home/bin/spark-class" org.apache.spark.deploy.worker.Worker "$SPARK_MASTER" \
      --host "${SPARK_WORKER_HOST:-$(hostname)}" --cores "${SPARK_WORKER_CORES:-1}" \
      --memory "${SPARK_WORKER_MEMORY:-1g}" --webui-port "${SPARK_WORKER_WEBUI_PORT:-8081}" \
      --work-dir "$VAR_DIR/spark-work" "$@"
    ;;
  history)
    # Without the token /metrics answers 401 and the store would keep nothing.
    : "${SLUICE_METRICS_TOKEN:?history needs SLUICE_METRICS_TOKEN, the bearer token that /metrics on web accepts}"
    export SLUICE_HISTORY_HOST="${SLUICE_HISTORY_HOST:-0.0.0.0}"
    export SLUICE_HISTORY_SCRAPE_TARGET="${SLUICE_HISTORY_SCRAPE_TARGET:-web:8000}"
    exec bash /app/scripts/victoriametrics.sh "$@"
    ;;
  manage)
    exec "${MANAGE[@]}" "$@"
    ;;
  healthcheck)
    healthcheck "$@"
    ;;
  *)
    exec "$role" "$@"
    ;;
esac
