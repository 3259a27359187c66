#!/usr/bin/env bash
# Builds the OpenTofu CLI (`tofu`) that Terraform steps run, from the Go module proxy, under the
# cache (never a dependency of Gantry: OpenTofu's go.mod replaces hashicorp/hcl with its own
# fork, which applies only when OpenTofu is the main module, so the module is copied and built
# in place). Prints the binary's path. Cold: about 4 minutes on 2 cores; then cached, keyed by
# the version, the Go version and this script.
set -euo pipefail
cd "$(dirname "$0")/../.."
VERSION=${GANTRY_TOFU_VERSION:-v1.12.6}
KEY=$(printf '%s\n%s\n' "$VERSION" "$(go env GOVERSION)" | cat - hack/tofu/build.sh | sha256sum | cut -c1-16)
OUT=${GANTRY_TOFU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gantry/tofu}/$KEY
if [ -x "$OUT/tofu" ]; then echo "$OUT/tofu"; exit 0; fi
mkdir -p "$(dirname "$OUT")"
TMP=$(mktemp -d "$OUT.tmp.XXXXXX")
t0=$(date +%s)
SRC=$(go mod download -json "github.com/opentofu/opentofu@$VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
[ -d "$SRC" ] || { echo "go mod download github.com/opentofu/opentofu@$VERSION gave no source folder" >&2; exit 1; }
cp -r "$SRC" "$TMP/src" && chmod -R u+w "$TMP/src"
( cd "$TMP/src" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$TMP/tofu" ./cmd/tofu >&2 )
rm -rf "$TMP/src"
if [ -x "$OUT/tofu" ]; then rm -rf "$TMP"; else rm -rf "$OUT" && mv "$TMP" "$OUT"; fi
echo "built tofu $VERSION in $(( $(date +%s) - t0 ))s" >&2
echo "$OUT/tofu"
