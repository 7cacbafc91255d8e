#!/usr/bin/env bash
# The build steps of the container image, kept here so that CI runs exactly what the
# Dockerfile runs (scripts/test-container-build.sh runs them against a fresh copy of the
# repository). Run from the root of a copy of the source (the Dockerfile's WORKDIR).
#
#   scripts/container-build-steps.sh build    npm ci (pinned dependencies; also builds dist/
#                                             through the `prepare` script), then drop the dev
#                                             dependencies and check what is left runs
#   scripts/container-build-steps.sh verify   only the check: the CLI starts, better-sqlite3
#                                             loads, a SQLite database migrates
#
# Needs Node.js 20.18+ and npm 11 (package.json's `allowScripts` — which packages may run
# install scripts — is read by npm 11; npm 10 would run node-llama-cpp's postinstall, which
# tries to download llama.cpp builds). better-sqlite3 compiles from source when no prebuilt
# binary can be downloaded: that needs python3, make and g++.
set -euo pipefail

step="${1:-build}"

need_npm_11() {
  local major
  major="$(npm --version | cut -d. -f1)"
  if [ "$major" -lt 11 ]; then
    echo "container-build-steps: npm $(npm --version) is too old: npm 11 reads package.json's allowScripts (install npm@11 first: npm install -g npm@11.19.1)" >&2
    exit 1
  fi
}

verify() {
  node dist/src/cli.js --version
  node -e "const S=require('better-sqlite3'); const d=new S(':memory:'); if (d.prepare('select 41+1 as x').get().x !== 42) process.exit(1); d.close()"
  local tmp
  tmp="$(mktemp -d)"
  OP_DATABASE_URL="sqlite:${tmp}/check.db" node dist/src/cli.js migrate >/dev/null
  rm -rf "$tmp"
  test -f dist/dashboard/index.html
  echo "container-build-steps: verified (CLI, better-sqlite3, migrations, dashboard)"
}

case "$step" in
  build)
    need_npm_11
    # Exactly what package-lock.json pins; `prepare` runs `npm run build` (dist/ and the dashboard).
    npm ci --no-audit --no-fund
    # The image ships production dependencies only (tsc, esbuild, eslint… stay in the build stage).
    npm prune --omit=dev --no-audit --no-fund
    verify
    ;;
  verify)
    verify
    ;;
  *)
    echo "usage: $0 build|verify" >&2
    exit 2
    ;;
esac
