#!/bin/sh
# docker/local/redis.Dockerfile: redis-server [options] runs with protected mode off and data in /data.
set -eu
if [ "${1:-}" = redis-server ]; then
  shift
  exec redis-server --protected-mode no --dir /data "$@"
fi
exec "$@"
