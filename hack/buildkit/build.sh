#!/usr/bin/env bash
# Builds what BuildAndPush* steps run inside a CI stage's pod, from the Go module proxy, once
# per version set: BuildKit's daemon and client (static) and runc, which the daemon runs each
# RUN line of a Dockerfile with (static: cgo for its nsenter, Debian's libseccomp-dev for the
# seccomp profile BuildKit gives RUN lines). Cached outside the repo, keyed by this module's
# files; prints the directory holding bin/. Cold: about 1.5 minutes on 2 cores. Image it with
# `go run ./hack/helper-image --buildkit REF` (the tests' node does it itself).
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -e /usr/lib/x86_64-linux-gnu/libseccomp.a ] && [ ! -e /usr/lib/aarch64-linux-gnu/libseccomp.a ]; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libseccomp-dev; } >&2
fi
KEY=$(cat go.mod go.sum build.sh | sha256sum | cut -c1-16)
OUT=${GANTRY_BUILDKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gantry/buildkit}/$KEY
if [ -x "$OUT/bin/buildkitd" ] && [ -x "$OUT/bin/buildctl" ] && [ -x "$OUT/bin/runc" ]; then echo "$OUT"; exit 0; fi
mkdir -p "$(dirname "$OUT")"
TMP=$(mktemp -d "$OUT.tmp.XXXXXX")
t0=$(date +%s)
go mod download >&2
BV=$(go list -m -f '{{.Version}}' github.com/moby/buildkit)
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X github.com/moby/buildkit/version.Version=$BV" -o "$TMP/bin/" \
  github.com/moby/buildkit/cmd/buildkitd github.com/moby/buildkit/cmd/buildctl >&2
# runc's nsenter is C: a static cgo build, with seccomp (BuildKit gives RUN lines a profile).
CGO_ENABLED=1 go build -trimpath -tags 'seccomp netgo osusergo' -ldflags='-s -w -extldflags -static' -o "$TMP/bin/runc" \
  github.com/opencontainers/runc >&2
if [ -x "$OUT/bin/buildkitd" ]; then rm -rf "$TMP"; else rm -rf "$OUT" && mv "$TMP" "$OUT"; fi
echo "built BuildKit $BV and runc in $(( $(date +%s) - t0 ))s" >&2
echo "$OUT"
