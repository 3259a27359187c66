#!/usr/bin/env bash
# Builds the `helm` CLI, the baseline of `make bench`'s HelmDeploy figure, from the Go module
# proxy in a scratch module under the cache (not a dependency of Gantry), at the Helm version
# Gantry's own go.mod uses, so both sides run the same Helm code. Prints the binary's path.
# Cold: a few seconds of downloads and 2-4 minutes of compiling on 2 cores; then cached.
set -euo pipefail
cd "$(dirname "$0")/../.."
VERSION=$(go list -m -f '{{.Version}}' helm.sh/helm/v3)
KEY=$(printf '%s\n%s\n' "$VERSION" "$(go env GOVERSION)" | cat - hack/helm/build.sh | sha256sum | cut -c1-16)
OUT=${GANTRY_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gantry/helm}/$KEY
if [ -x "$OUT/helm" ]; then echo "$OUT/helm"; exit 0; fi
mkdir -p "$(dirname "$OUT")"
TMP=$(mktemp -d "$OUT.tmp.XXXXXX")
t0=$(date +%s)
( cd "$TMP" && go mod init gantry.local/helmcli >&2 2>/dev/null && GOFLAGS=-mod=mod go get "helm.sh/helm/v3@$VERSION" >&2 &&
  GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$VERSION" -o "$TMP/helm" helm.sh/helm/v3/cmd/helm >&2 )
if [ -x "$OUT/helm" ]; then rm -rf "$TMP"; else rm -rf "$OUT" && mv "$TMP" "$OUT"; fi
echo "built helm $VERSION in $(( $(date +%s) - t0 ))s" >&2
echo "$OUT/helm"
