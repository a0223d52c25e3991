#!/usr/bin/env bash
# Run a single-node KRaft Kafka (broker + controller in one JVM) in the FOREGROUND.
# Meant for a Procfile and for test fixtures: logs to stdout, `exec`s the JVM so SIGTERM/SIGINT
# reach Kafka directly (clean shutdown), listens on 127.0.0.1 only.
#
# Usage: scripts/kafka.sh [--override key=value ...]     (extra args go to kafka.Kafka)
#
# Env (all optional):
#   KAFKA_PORT             client listener port                       (default 9092)
#   KAFKA_CONTROLLER_PORT  KRaft controller listener port             (default 9093)
#   KAFKA_DATA_DIR         server.properties, cluster.id and logs/    (default $SLUICE_VAR_DIR/kafka,
#                          i.e. var/kafka; relative paths are taken from the repo root)
#   KAFKA_HEAP             JVM heap flags                             (default "-Xmx512m -Xms256m")
#   KAFKA_NUM_PARTITIONS   partitions of auto-created topics          (default 1)
#   KAFKA_CLUSTER_ID       cluster id used when formatting a new data dir (default: random)
#   KAFKA_OPTS             extra JVM options
#   KAFKA_LOG4J_CONFIG     log4j2 config file (default scripts/kafka/log4j2.properties)
# A node of a cluster (the fault suite's three brokers, tests/support/kafka_cluster.py):
#   KAFKA_NODE_ID          node.id                                    (default 1)
#   KAFKA_QUORUM_VOTERS    controller.quorum.voters, `id@host:port,…` (default: none, a standalone
#                          controller); every node is formatted with the same KAFKA_CLUSTER_ID
#   KAFKA_REPLICATION      replication factor of new and internal topics      (default 1)
#   KAFKA_MIN_ISR          min.insync.replicas of new and internal topics     (default 1)
#   KAFKA_OFFSETS_PARTITIONS  partitions of __consumer_offsets: a group's coordinator is the
#                          leader of one of them (its id hashed)              (default 1)
#   KAFKA_EXTRA_LISTENER   `address:port`: a second client listener (advertised as given), e.g. a
#                          bridge that network namespaces reach                (default: none)
#
# The data dir is formatted (kafka-storage format --standalone) on first start only; delete it
# to start from scratch. server.properties is regenerated on every start.
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"

KAFKA_PORT="${KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
KAFKA_DATA_DIR="$(abs_path "${KAFKA_DATA_DIR:-$VAR_DIR/kafka}")"
KAFKA_HEAP="${KAFKA_HEAP:--Xmx512m -Xms256m}"
KAFKA_NUM_PARTITIONS="${KAFKA_NUM_PARTITIONS:-1}"
KAFKA_LOG4J_CONFIG="$(abs_path "${KAFKA_LOG4J_CONFIG:-scripts/kafka/log4j2.properties}")"
KAFKA_NODE_ID="${KAFKA_NODE_ID:-1}"
KAFKA_QUORUM_VOTERS="${KAFKA_QUORUM_VOTERS:-}"
KAFKA_REPLICATION="${KAFKA_REPLICATION:-1}"
KAFKA_MIN_ISR="${KAFKA_MIN_ISR:-1}"
KAFKA_OFFSETS_PARTITIONS="${KAFKA_OFFSETS_PARTITIONS:-1}"
KAFKA_EXTRA_LISTENER="${KAFKA_EXTRA_LISTENER:-}"
HOST=127.0.0.1

require_port "$KAFKA_PORT" KAFKA_PORT
require_port "$KAFKA_CONTROLLER_PORT" KAFKA_CONTROLLER_PORT
[[ "$KAFKA_PORT" != "$KAFKA_CONTROLLER_PORT" ]] || die "KAFKA_PORT and KAFKA_CONTROLLER_PORT must differ"
[[ "$KAFKA_NUM_PARTITIONS" =~ ^[1-9][0-9]*$ ]] || die "KAFKA_NUM_PARTITIONS must be a positive integer"
for name in KAFKA_NODE_ID KAFKA_REPLICATION KAFKA_MIN_ISR KAFKA_OFFSETS_PARTITIONS; do
  [[ "${!name}" =~ ^[1-9][0-9]*$ ]] || die "$name must be a positive integer"
done
if [[ -n "$KAFKA_EXTRA_LISTENER" ]]; then
  [[ "$KAFKA_EXTRA_LISTENER" =~ ^[0-9.]+:[0-9]+$ ]] || die "KAFKA_EXTRA_LISTENER must be address:port"
  extra_host="${KAFKA_EXTRA_LISTENER%:*}"
  [[ "$extra_host" != 0.0.0.0 ]] || die "KAFKA_EXTRA_LISTENER must name one address, not 0.0.0.0"
fi
[[ -f "$KAFKA_LOG4J_CONFIG" ]] || die "log4j2 config not found: $KAFKA_LOG4J_CONFIG"
command -v java >/dev/null || die "java not found: run scripts/ensure-system.sh"

# Jars (instant when already fetched).
"$ROOT/scripts/fetch-jars.sh" kafka
CLASSPATH_DIR="$ROOT/.cache/jars/kafka"

for p in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
  if port_in_use "$HOST" "$p"; then
    die "port $HOST:$p is already in use (another Kafka?). Set KAFKA_PORT / KAFKA_CONTROLLER_PORT."
  fi
done
listeners="PLAINTEXT://$HOST:$KAFKA_PORT,CONTROLLER://$HOST:$KAFKA_CONTROLLER_PORT"
advertised="PLAINTEXT://$HOST:$KAFKA_PORT,CONTROLLER://$HOST:$KAFKA_CONTROLLER_PORT"
protocols="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
if [[ -n "$KAFKA_EXTRA_LISTENER" ]]; then
  port_in_use "${KAFKA_EXTRA_LISTENER%:*}" "${KAFKA_EXTRA_LISTENER#*:}" \
    && die "$KAFKA_EXTRA_LISTENER is already in use (KAFKA_EXTRA_LISTENER)"
  listeners+=",EXTRA://$KAFKA_EXTRA_LISTENER"
  advertised+=",EXTRA://$KAFKA_EXTRA_LISTENER"
  protocols+=",EXTRA:PLAINTEXT"
fi
if [[ -n "$KAFKA_QUORUM_VOTERS" ]]; then
  quorum="controller.quorum.voters=$KAFKA_QUORUM_VOTERS"
  format_mode=()  # the voters are fixed in the configuration
else
  quorum="controller.quorum.bootstrap.servers=$HOST:$KAFKA_CONTROLLER_PORT"
  format_mode=(--standalone)
fi

mkdir -p "$KAFKA_DATA_DIR/logs"
PROPS="$KAFKA_DATA_DIR/server.properties"
cat >"$PROPS" <<EOF
# Generated by scripts/kafka.sh on every start -- edit the script (or pass --override k=v), not this file.
process.roles=broker,controller
node.id=$KAFKA_NODE_ID
$quorum

listeners=$listeners
advertised.listeners=$advertised
listener.security.protocol.map=$protocols
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER

log.dirs=$KAFKA_DATA_DIR/logs

# one replica of everything on a single node; KAFKA_REPLICATION / KAFKA_MIN_ISR on a cluster
default.replication.factor=$KAFKA_REPLICATION
min.insync.replicas=$KAFKA_MIN_ISR
offsets.topic.replication.factor=$KAFKA_REPLICATION
offsets.topic.num.partitions=$KAFKA_OFFSETS_PARTITIONS
transaction.state.log.replication.factor=$KAFKA_REPLICATION
transaction.state.log.min.isr=$KAFKA_MIN_ISR
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=$KAFKA_REPLICATION
share.coordinator.state.topic.min.isr=$KAFKA_MIN_ISR

auto.create.topics.enable=true
num.partitions=$KAFKA_NUM_PARTITIONS
group.initial.rebalance.delay.ms=0
# A dead broker's partitions move once the controller has heard nothing from it this long
# (Kafka's default: 9 s), and the runtime group's coordinator moves with them; it must move
# well within the group's session (SLUICE_RUNTIME_SESSION_TIMEOUT, 10 s), or every runtime
# worker drops its channels when the coordinator's broker dies (docs/runtime-group.md). When
# the dead broker was also the active controller, a new one is elected first (the followers
# wait the quorum's fetch timeout, Kafka's default 2 s) and waits the broker session from its
# own start: 8.7 s in all with a 6 s session, too late for a 10 s group session.
broker.session.timeout.ms=4000
broker.heartbeat.interval.ms=1000
controller.quorum.fetch.timeout.ms=1000
controller.quorum.election.timeout.ms=1000
delete.topic.enable=true
EOF

read -r -a heap_opts <<<"$KAFKA_HEAP"
read -r -a extra_opts <<<"${KAFKA_OPTS:-}"
JAVA_OPTS=(
  "${heap_opts[@]}"
  -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
  -XX:+ExplicitGCInvokesConcurrent -XX:+ExitOnOutOfMemoryError
  -Djava.awt.headless=true
  "-Dlog4j2.configurationFile=$KAFKA_LOG4J_CONFIG"
  -Dlog4j2.shutdownHookEnabled=false   # keep logging until Kafka's own shutdown hook is done
  "-Dkafka.logs.dir=$KAFKA_DATA_DIR"
  "${extra_opts[@]}"
  -cp "$CLASSPATH_DIR/*"
)

if [[ ! -f "$KAFKA_DATA_DIR/logs/meta.properties" ]]; then
  if [[ -n "${KAFKA_CLUSTER_ID:-}" ]]; then
    cluster_id="$KAFKA_CLUSTER_ID"
  elif [[ -s "$KAFKA_DATA_DIR/cluster.id" ]]; then
    cluster_id="$(<"$KAFKA_DATA_DIR/cluster.id")"
  else
    # A Kafka Uuid: 16 random bytes, URL-safe base64 without padding, not starting with '-'.
    cluster_id="-"
    while [[ "$cluster_id" == -* ]]; do
      cluster_id="$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
    done
  fi
  echo "$cluster_id" >"$KAFKA_DATA_DIR/cluster.id"
  log "formatting new KRaft storage in $KAFKA_DATA_DIR/logs (cluster id $cluster_id, node $KAFKA_NODE_ID, voters ${KAFKA_QUORUM_VOTERS:-standalone})"
  java "${JAVA_OPTS[@]}" kafka.tools.StorageTool format "${format_mode[@]}" \
    --cluster-id "$cluster_id" --config "$PROPS" --ignore-formatted \
    || die "kafka-storage format failed"
fi

log "starting Kafka on $HOST:$KAFKA_PORT (controller $HOST:$KAFKA_CONTROLLER_PORT, data $KAFKA_DATA_DIR, cluster $(<"$KAFKA_DATA_DIR/cluster.id"))"
exec java "${JAVA_OPTS[@]}" kafka.Kafka "$PROPS" "$@"
