# Stand-in for apache/kafka:4.3.1 where no image registry can be reached (docker/compose.local.yaml):
# the same Kafka the project runs outside containers (scripts/fetch-jars.sh kafka, from Maven
# Central), configured like the official image: every KAFKA_FOO_BAR variable is the server
# property foo.bar, CLUSTER_ID formats the storage on first start, and
# /opt/kafka/bin/kafka-broker-api-versions.sh exists for health checks.
# Build context: the repository root.
ARG MAVEN_IMAGE=sluice-local/maven:3-jdk17
ARG DEBIAN_IMAGE=sluice-local/debian:bookworm

FROM ${MAVEN_IMAGE} AS jars
WORKDIR /src
COPY scripts/_lib.sh scripts/fetch-jars.sh scripts/
COPY scripts/jars/ scripts/jars/
# The CA bundle of a TLS-inspecting proxy, if any (docs/cluster.md): see docker/Dockerfile.
COPY docker/ca-truststore.sh docker/CaTrustStore.java /usr/local/lib/sluice/
RUN --mount=type=secret,id=ca_bundle --mount=type=cache,target=/root/.m2 \
    . /usr/local/lib/sluice/ca-truststore.sh \
    && bash scripts/fetch-jars.sh kafka \
    && ls .cache/jars/kafka/*.jar >/dev/null

FROM ${DEBIAN_IMAGE}
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 1000 --home-dir /var/lib/kafka --shell /usr/sbin/nologin appuser \
    && mkdir -p /var/lib/kafka/data /opt/kafka/config && chown -R appuser /var/lib/kafka /opt/kafka/config
COPY --from=jars /src/.cache/jars/kafka/ /opt/kafka/libs/
COPY scripts/kafka/log4j2.properties /opt/kafka/config/log4j2.properties
COPY docker/local/kafka-entrypoint.sh /opt/kafka/bin/docker-entrypoint.sh
COPY docker/local/kafka-broker-api-versions.sh /opt/kafka/bin/kafka-broker-api-versions.sh
USER appuser
EXPOSE 9092
ENTRYPOINT ["/opt/kafka/bin/docker-entrypoint.sh"]
