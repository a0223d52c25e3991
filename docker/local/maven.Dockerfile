# Stand-in for maven:3-eclipse-temurin-17 where no image registry can be reached
# (docker/compose.local.yaml): Debian's Maven and OpenJDK 17 JDK.
ARG DEBIAN_IMAGE=sluice-local/debian:bookworm
FROM ${DEBIAN_IMAGE}
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jdk-headless maven ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && mvn --version
CMD ["mvn"]
