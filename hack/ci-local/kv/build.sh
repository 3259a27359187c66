#!/usr/bin/env bash
# Builds kv-server (main.go: miniredis, a Redis-compatible in-memory store) statically, for the
# image of examples/ci-local's Background service, once per version: cached outside the repo,
# keyed by this module's files. Prints the binary's path.
set -euo pipefail
cd "$(dirname "$0")"
KEY=$(cat go.mod go.sum build.sh main.go | sha256sum | cut -c1-16)
OUT=${GANTRY_KV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gantry/kv}/$KEY
if [ -x "$OUT/kv-server" ]; then echo "$OUT/kv-server"; exit 0; fi
mkdir -p "$OUT"
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$OUT/kv-server.tmp" . >&2
mv "$OUT/kv-server.tmp" "$OUT/kv-server"
echo "$OUT/kv-server"
