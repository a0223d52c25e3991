#!/usr/bin/env bash
# Build the browser console (frontend/) into frontend/dist, which Django serves at "/".
#   `npm ci` only when package-lock.json changed or node_modules is missing (a stamp in
#   node_modules remembers the lock file's hash); `npm run build` only when a source is newer
#   than the last build. Packages come from the npm registry; nothing else is downloaded.
# Usage: scripts/frontend.sh [--check]   --check also runs the API types' drift check
#   (scripts/api-types.sh --check: needs the venv), tsc --noEmit, ESLint, Prettier's check
#   (npm run format fixes what it finds) and Vitest.
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"
cd frontend

command -v node >/dev/null && command -v npm >/dev/null \
  || die "node and npm are needed to build the console (Node.js >= 20.19)"
node_version="$(node -p 'process.versions.node')"
IFS=. read -r major minor _ <<<"$node_version"
if (( major < 20 || (major == 20 && minor < 19) )); then
  die "Node.js $node_version is too old: Vite needs >= 20.19"
fi

stamp="node_modules/.sluice-lock-$(sha1sum package-lock.json | cut -c1-12)"
if [[ ! -e "$stamp" ]]; then
  log "installing the console's packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
  touch "$stamp"
fi

newer="$(find src index.html vite.config.ts tsconfig.json package-lock.json -newer dist/index.html \
  -print -quit 2>/dev/null || true)"
if [[ ! -f dist/index.html || -n "$newer" ]]; then
  log "building the console (vite build)"
  npm run --silent build -- --logLevel warn
else
  log "console build is up to date"
fi

if [[ "${1:-}" == "--check" ]]; then
  log "API types (src/api/schema.d.ts) against the OpenAPI schema"
  bash "$ROOT/scripts/api-types.sh" --check
  log "tsc --noEmit"
  npx --no-install tsc --noEmit
  log "eslint"
  npm run --silent lint
  log "prettier (npm run format fixes what it reports)"
  npm run --silent format:check
  log "vitest"
  npx --no-install vitest run --reporter=dot
fi
