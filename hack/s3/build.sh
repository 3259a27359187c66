#!/usr/bin/env bash
# Builds versitygw, a real S3-compatible server (SigV4, buckets, multipart, listings), from the
# Go module proxy once per version: the tests and `make bench` ship step logs, artifacts and
# manifests through it. The binary is cached outside the repo; prints its path.
# Cold: a few seconds of downloads and about 1 minute of compiling on 2 cores.
set -euo pipefail
cd "$(dirname "$0")"
VERSION=v1.8.0
KEY=$(printf '%s\n%s\n' "$VERSION" "$(go env GOVERSION)" | cat - build.sh | sha256sum | cut -c1-16)
OUT=${GANTRY_S3_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gantry/s3}/$KEY
if [ -x "$OUT/versitygw" ]; then echo "$OUT/versitygw"; exit 0; fi
mkdir -p "$(dirname "$OUT")"
TMP=$(mktemp -d "$OUT.tmp.XXXXXX")
t0=$(date +%s)
# Outside any module, so Gantry's go.mod is neither read nor changed.
( cd "$TMP" && GOFLAGS= GOBIN="$TMP" go install -trimpath -ldflags "-s -w" "github.com/versity/versitygw/cmd/versitygw@$VERSION" >&2 )
if [ -x "$OUT/versitygw" ]; then rm -rf "$TMP"; else rm -rf "$OUT" && mv "$TMP" "$OUT"; fi
echo "built versitygw $VERSION in $(( $(date +%s) - t0 ))s" >&2
echo "$OUT/versitygw"
