#!/usr/bin/env bash
# The manual (MkDocs Material, mkdocs.yml): `build` writes build/site with --strict (a broken
# link, a missing anchor or a generated reference page that cannot be rendered fails it);
# `serve` serves it on 127.0.0.1:8001 and rebuilds on every change. Nothing is fetched from
# the network, at build time or when reading.
# Usage: scripts/docs.sh build|serve
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
# The theme's end-of-life banner is not a problem of this site.
export NO_MKDOCS_2_WARNING=1
case "${1:-build}" in
  build) exec mkdocs build --strict --clean ;;
  serve) exec mkdocs serve --strict --dev-addr 127.0.0.1:8001 ;;
  *) echo "usage: $0 build|serve" >&2; exit 2 ;;
esac
