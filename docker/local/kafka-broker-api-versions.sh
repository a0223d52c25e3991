#!/bin/bash
# The official image's tool of that name (its health checks call it), on this image's jars.
exec java -Xmx64m -XX:TieredStopAtLevel=1 -Xshare:auto -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties \
  -cp '/opt/kafka/libs/*' org.apache.kafka.tools.BrokerApiVersionsCommand "$@"
