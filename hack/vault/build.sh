#!/usr/bin/env bash
# Builds HashiCorp Vault, the real server the Vault connector's tests read secrets from, from the
# Go module proxy once per version (OpenBao cannot be: the proxy serves no version of
# github.com/openbao/openbao). Vault's go.mod replaces its api and sdk modules with folders that
# the proxy's copy of the main module leaves out, so the source is copied and those replaces
# are dropped. No released sdk matches v1.21.4's own exactly: v0.20.0 lacks
# Backend.TryRecordObservationWithRequest; v0.21.0 differs in two signatures, which two edits
# below adapt (a feature flag's activation callback, and the transit key restore's result).
# The binary is cached outside the repo, keyed by the version, the Go version and this script;
# prints its path. Cold: about 15 minutes on 2 cores, most of it compiling.
set -euo pipefail
cd "$(dirname "$0")"
VERSION=${GANTRY_VAULT_VERSION:-v1.21.4}
SDK=${GANTRY_VAULT_SDK:-v0.21.0}
KEY=$(printf '%s\n%s\n%s\n' "$VERSION" "$SDK" "$(go env GOVERSION)" | cat - build.sh | sha256sum | cut -c1-16)
OUT=${GANTRY_VAULT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gantry/vault}/$KEY
if [ -x "$OUT/vault" ]; then echo "$OUT/vault"; exit 0; fi
mkdir -p "$(dirname "$OUT")"
TMP=$(mktemp -d "$OUT.tmp.XXXXXX")
trap 'rm -rf "$TMP/src"' EXIT
t0=$(date +%s)
SRC=$(cd "$TMP" && GOFLAGS= go mod download -json "github.com/hashicorp/vault@$VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
[ -d "$SRC" ] || { echo "go mod download github.com/hashicorp/vault@$VERSION gave no source folder" >&2; exit 1; }
cp -r "$SRC" "$TMP/src" && chmod -R u+w "$TMP/src"
(
  cd "$TMP/src"
  for m in api api/auth/approle api/auth/kubernetes api/auth/userpass sdk; do
    go mod edit -dropreplace="github.com/hashicorp/vault/$m"
  done
  go mod edit -require="github.com/hashicorp/vault/sdk@$SDK"
  edit() { # file, then a perl substitution that must change it
    perl -0pi -e "$2" "$1"
    grep -q "$3" "$1" || { echo "hack/vault/build.sh: $1 no longer reads as expected; adapt the edit for $VERSION" >&2; exit 1; }
  }
  edit vault/identity_store_util.go 's/activateDeduplication\(ctx context.Context, req \*logical.Request\) error/activateDeduplication(ctx context.Context, req *logical.Request, _ string) error/' 'req \*logical.Request, _ string'
  edit vault/logical_system_activation_flags.go 's/ActivationFunc\(ctx, nil\)/ActivationFunc(ctx, nil, "")/' 'ActivationFunc(ctx, nil, "")'
  edit builtin/logical/transit/path_restore.go 's/restoredKeyName, err := b.lm.RestorePolicy/restoredKeyName, err := keyName, b.lm.RestorePolicy/' 'err := keyName, b.lm'
  CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$TMP/vault" . >&2
)
if [ -x "$OUT/vault" ]; then rm -rf "$TMP"; else rm -rf "$OUT" && mv "$TMP" "$OUT"; fi
echo "built vault $VERSION in $(( $(date +%s) - t0 ))s" >&2
echo "$OUT/vault"
