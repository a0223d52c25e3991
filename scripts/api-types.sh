#!/usr/bin/env bash
# The console's TypeScript API types, generated: drf-spectacular writes the OpenAPI schema of
# /api/v1/ (`manage.py spectacular`), openapi-typescript (pinned in frontend/package.json) turns
# it into frontend/src/api/schema.d.ts, which is committed and never edited by hand.
# Usage: scripts/api-types.sh [--check]
#   (none)   regenerate schema.d.ts (rewritten only when it changed, so Vite does not rebuild)
#   --check  fail when the committed schema.d.ts differs from what the current API generates;
#            the schema is generated twice and compared first, so a drift report is never
#            the noise of a schema that changes from one run to the next
# Needs the venv (make install) and the console's packages (make frontend).
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"

check=false
case "${1:-}" in
  "") ;;
  --check) check=true ;;
  *) die "usage: scripts/api-types.sh [--check]" ;;
esac

target=frontend/src/api/schema.d.ts
python=.venv/bin/python
generator=frontend/node_modules/.bin/openapi-typescript
[[ -x "$python" ]] || die "no virtualenv in .venv: run make install"
[[ -x "$generator" ]] || die "openapi-typescript is not installed: run make frontend (npm ci)"

work="$(mktemp -d -t sluice-api-types-XXXXXX)"
trap 'rm -rf "$work"' EXIT

# The schema is derived from the code alone: a throwaway var dir (static files) and no
# DATABASE_URL, so neither a developer's var/ nor their database is touched or consulted.
# --fail-on-warn: a warning means a part of the schema drf-spectacular had to guess, and the
# types generated from a guess would be wrong without anyone noticing.
spectacular() {
  env -u DATABASE_URL SLUICE_VAR_DIR="$work/var" \
    "$python" manage.py spectacular --validate --fail-on-warn --file "$1"
}

spectacular "$work/openapi.yaml"
if $check; then
  spectacular "$work/openapi-again.yaml"
  if ! cmp -s "$work/openapi.yaml" "$work/openapi-again.yaml"; then
    diff -u "$work/openapi.yaml" "$work/openapi-again.yaml" | head -n 40 >&2 || true
    die "manage.py spectacular gave two different schemas for the same code: make it deterministic"
  fi
fi

"$generator" "$work/openapi.yaml" >"$work/schema.d.ts"

if cmp -s "$work/schema.d.ts" "$target"; then
  log "$target is up to date with the API schema"
elif $check; then
  diff -u "$target" "$work/schema.d.ts" | head -n 60 >&2 || true
  die "$target is out of date with the API schema: run make api-types and commit the result"
else
  cp "$work/schema.d.ts" "$target"
  log "wrote $target"
fi
