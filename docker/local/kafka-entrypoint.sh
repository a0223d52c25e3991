#!/bin/bash
# docker/local/kafka.Dockerfile: KAFKA_FOO_BAR=v -> foo.bar=v, format on first start, run the broker.
set -euo pipefail
props=/opt/kafka/config/server.properties
: >"$props"
while IFS='=' read -r name value; do
  case "$name" in
    KAFKA_HEAP_OPTS|KAFKA_OPTS|KAFKA_JVM_PERFORMANCE_OPTS|KAFKA_LOG4J_OPTS) continue ;;
    KAFKA_*) key="${name#KAFKA_}"; key="${key,,}"; printf '%s=%s\n' "${key//_/.}" "$value" >>"$props" ;;
  esac
done < <(env)
read -r -a heap <<<"${KAFKA_HEAP_OPTS:--Xmx512m -Xms256m}"
read -r -a extra <<<"${KAFKA_OPTS:-}"
java_opts=("${heap[@]}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError
  -Djava.awt.headless=true -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties
  "${extra[@]}" -cp '/opt/kafka/libs/*')
log_dir="$(sed -n 's/^log\.dirs=//p' "$props")"
if [[ ! -f "${log_dir:-/var/lib/kafka/data}/meta.properties" ]]; then
  java "${java_opts[@]}" kafka.tools.StorageTool format --cluster-id "${CLUSTER_ID:?CLUSTER_ID must be set}" \
    --config "$props" --ignore-formatted
fi
exec java "${java_opts[@]}" kafka.Kafka "$props" "$@"
