# Stand-in for python:3.11-slim-bookworm where no image registry can be reached
# (docker/compose.local.yaml): Debian bookworm's own Python 3.11, with venv.
ARG DEBIAN_IMAGE=sluice-local/debian:bookworm
FROM ${DEBIAN_IMAGE}
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python-is-python3 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && python --version
CMD ["python3"]
