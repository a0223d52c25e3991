#!/usr/bin/env bash
# Usage: scripts/wait-for-port.sh HOST PORT TIMEOUT_SECONDS
# Waits until HOST:PORT accepts a TCP connection, polling every 0.2 s.
# Exit 0 when it does, 1 on timeout, 2 on bad usage. Needs only bash (uses /dev/tcp) + coreutils.
set -euo pipefail

usage() { echo "usage: $0 HOST PORT TIMEOUT_SECONDS" >&2; exit 2; }
[[ $# -eq 3 ]] || usage
host=$1 port=$2 timeout_s=$3
if ! [[ "$port" =~ ^[0-9]+$ ]] || (( port < 1 || port > 65535 )); then usage; fi
[[ "$timeout_s" =~ ^[0-9]+$ ]] || usage

now_ms() { local t=${EPOCHREALTIME/./}; echo $(( 10#${t:0:${#t}-3} )); }
start=$(now_ms)
deadline=$(( start + timeout_s * 1000 ))

while :; do
  # shellcheck disable=SC2016  # $1/$2 expand in the child bash
  if timeout 1 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$host" "$port" 2>/dev/null; then
    ms=$(( $(now_ms) - start ))
    printf 'wait-for-port: %s:%s is accepting connections (after %d.%03ds)\n' \
      "$host" "$port" $((ms / 1000)) $((ms % 1000))
    exit 0
  fi
  if (( $(now_ms) >= deadline )); then
    printf 'wait-for-port: timed out after %ss waiting for %s:%s\n' "$timeout_s" "$host" "$port" >&2
    exit 1
  fi
  sleep 0.2
done
