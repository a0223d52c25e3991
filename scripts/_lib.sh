# shellcheck shell=bash
# Shared helpers for scripts/*.sh (sourced, not executed).
# Sets ROOT (the repo root, computed from this file's location) and cds there, so every
# relative path in the scripts (.cache/, var/, scripts/) is relative to the repo root.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT" || exit 1

_SCRIPT_NAME="$(basename "${0}" .sh)"

log()  { printf '==> %s: %s\n' "$_SCRIPT_NAME" "$*"; }
warn() { printf '==> %s: WARNING: %s\n' "$_SCRIPT_NAME" "$*" >&2; }
die()  { printf '==> %s: ERROR: %s\n' "$_SCRIPT_NAME" "$*" >&2; exit 1; }

# Base for runtime state (data dirs); the same variable run.sh and runtime_adapter use.
# shellcheck disable=SC2034  # used by the scripts that source this file
VAR_DIR="${SLUICE_VAR_DIR:-var}"

# abs_path PATH -> PATH made absolute, relative paths taken from the repo root.
abs_path() {
  case "$1" in
    /*) printf '%s\n' "$1" ;;
    *)  printf '%s\n' "$ROOT/${1#./}" ;;
  esac
}

# port_in_use HOST PORT -> 0 if something accepts TCP connections there.
port_in_use() {
  # shellcheck disable=SC2016  # $1/$2 expand in the child bash
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
}

# require_port NUMBER NAME -> dies unless NUMBER is a valid TCP port.
require_port() {
  if ! [[ "$1" =~ ^[0-9]+$ ]] || (( $1 < 1 || $1 > 65535 )); then
    die "$2 must be a TCP port number, got '$1'"
  fi
}
