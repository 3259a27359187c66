#!/usr/bin/env bash
# Builds the test provider (hack/tofu/provider, registry.opentofu.org/gantry/gantry 0.1.0) from
# the Go module proxy into a filesystem mirror, as a worker that reaches no registry installs
# providers (`gantry worker --terraform-plugins DIR`). Prints the mirror's folder. Cached, keyed
# by the provider's source, its go.sum, the Go version and this script.
set -euo pipefail
cd "$(dirname "$0")/../.."
VERSION=0.1.0
KEY=$( (go env GOVERSION; cat hack/tofu/provider.sh hack/tofu/provider/go.mod hack/tofu/provider/go.sum hack/tofu/provider/*.go) | sha256sum | cut -c1-16)
OUT=${GANTRY_TOFU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gantry/tofu}/provider-$KEY
if [ -d "$OUT/mirror" ]; then echo "$OUT/mirror"; exit 0; fi
mkdir -p "$(dirname "$OUT")"
TMP=$(mktemp -d "$OUT.tmp.XXXXXX")
PLATFORM=$(go env GOOS)_$(go env GOARCH)
DEST="$TMP/mirror/registry.opentofu.org/gantry/gantry/$VERSION/$PLATFORM"
mkdir -p "$DEST"
( cd hack/tofu/provider && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$DEST/terraform-provider-gantry_v$VERSION" . >&2 )
if [ -d "$OUT/mirror" ]; then rm -rf "$TMP"; else rm -rf "$OUT" && mv "$TMP" "$OUT"; fi
echo "$OUT/mirror"
