#!/usr/bin/env bash
# Run a class from the Kafka 4.3.1 jars (.cache/jars/kafka), like Kafka's bin/kafka-run-class.sh:
#   scripts/kafka-run-class.sh org.apache.kafka.tools.ProducerPerformance --topic t \
#       --num-records 100000 --record-size 200 --throughput -1 --producer-props bootstrap.servers=127.0.0.1:9092
#   scripts/kafka-run-class.sh org.apache.kafka.tools.ConsumerPerformance --topic t --messages 100000 \
#       --bootstrap-server 127.0.0.1:9092
#   scripts/kafka-run-class.sh org.apache.kafka.tools.TopicCommand --bootstrap-server 127.0.0.1:9092 --list
# Env: KAFKA_TOOLS_HEAP (default -Xmx512m), KAFKA_OPTS (extra JVM options),
#      KAFKA_LOG4J_CONFIG (default scripts/kafka/tools-log4j2.properties: WARN to stderr).
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"

(( $# >= 1 )) || die "usage: $0 CLASS [ARGS...]"
command -v java >/dev/null || die "java not found: run scripts/ensure-system.sh"
"$ROOT/scripts/fetch-jars.sh" kafka >&2
read -r -a heap_opts <<<"${KAFKA_TOOLS_HEAP:--Xmx512m}"
read -r -a extra_opts <<<"${KAFKA_OPTS:-}"
exec java "${heap_opts[@]}" "${extra_opts[@]}" \
  "-Dlog4j2.configurationFile=$(abs_path "${KAFKA_LOG4J_CONFIG:-scripts/kafka/tools-log4j2.properties}")" \
  -cp "$ROOT/.cache/jars/kafka/*" "$@"
