#!/usr/bin/env bash
# CI check of the Dockerfile's build steps (container images cannot be built on the CI machines:
# no registry for base images). Copies the repository as the Dockerfile's build context sees it
# (.dockerignore applied: no node_modules, no dist) into a temporary directory, runs
# scripts/container-build-steps.sh build there (npm ci from the npm cache when it can, the
# build, prune to production dependencies, the runtime check), then the runtime check again
# from a copy holding only what the runtime stage copies.
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d "${TMPDIR:-/tmp}/op-container-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

excludes=()
while IFS= read -r line; do
  line="${line%%#*}"; line="${line%"${line##*[![:space:]]}"}"
  [ -z "$line" ] && continue
  excludes+=("--exclude=./${line#/}")
done < .dockerignore

mkdir -p "$work/build" "$work/runtime"
tar -cf - "${excludes[@]}" . | tar -xf - -C "$work/build"
test ! -e "$work/build/node_modules" && test ! -e "$work/build/dist"

started=$(date +%s)
(cd "$work/build" && npm_config_prefer_offline=true scripts/container-build-steps.sh build)

# The runtime stage: only these paths (Dockerfile's COPY --from=build lines).
for p in package.json package-lock.json vendor node_modules dist scripts/container-build-steps.sh; do
  mkdir -p "$work/runtime/$(dirname "$p")"
  cp -a "$work/build/$p" "$work/runtime/$p"
done
# Dev-only packages are gone (typescript stays: node-llama-cpp depends on it).
for dev in eslint playwright-core autocannon tsx; do
  test ! -e "$work/runtime/node_modules/$dev" || { echo "test-container-build: dev dependency $dev left in the runtime stage" >&2; exit 1; }
done
(cd "$work/runtime" && scripts/container-build-steps.sh verify)
echo "test-container-build: the Dockerfile's build steps pass ($(( $(date +%s) - started )) s)"
