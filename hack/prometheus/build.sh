#!/usr/bin/env bash
# Builds the Prometheus server the Verify step's tests query, from the Go module proxy in a
# scratch module under the cache (not a dependency of Gantry), at the version of the PromQL
# parser Gantry's go.mod uses, so a query that validates is one this server runs. Built without
# the web UI's assets (the tests use its HTTP API) and without service discovery (the tests
# list their targets), which halves the build. Prints the binary's path.
# Cold: a minute of downloads and 3-5 minutes of compiling on 2 cores; then cached.
set -euo pipefail
cd "$(dirname "$0")/../.."
VERSION=$(go list -m -f '{{.Version}}' github.com/prometheus/prometheus)
KEY=$(printf '%s\n%s\n' "$VERSION" "$(go env GOVERSION)" | cat - hack/prometheus/build.sh | sha256sum | cut -c1-16)
OUT=${GANTRY_PROMETHEUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gantry/prometheus}/$KEY
if [ -x "$OUT/prometheus" ]; then echo "$OUT/prometheus"; exit 0; fi
mkdir -p "$(dirname "$OUT")"
TMP=$(mktemp -d "$OUT.tmp.XXXXXX")
t0=$(date +%s)
( cd "$TMP" && go mod init gantry.local/prometheus >&2 2>/dev/null &&
  GOFLAGS=-mod=mod go get "github.com/prometheus/prometheus@$VERSION" >&2 &&
  GOFLAGS=-mod=mod go build -trimpath -tags remove_all_sd -ldflags "-s -w" -o "$TMP/prometheus" github.com/prometheus/prometheus/cmd/prometheus >&2 )
if [ -x "$OUT/prometheus" ]; then rm -rf "$TMP"; else rm -rf "$OUT" && mv "$TMP" "$OUT"; fi
echo "built prometheus $VERSION in $(( $(date +%s) - t0 ))s" >&2
echo "$OUT/prometheus"
