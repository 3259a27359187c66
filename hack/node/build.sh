#!/usr/bin/env bash
# Builds what a real Kubernetes node needs beside hack/k8s's control plane and kubelet:
# containerd v2 with its runc shim and ctr, crane (the loopback registry and image tool) and
# the pause image's program, from the Go module proxy, once per version set: cached outside
# the repo, keyed by this module's files. Installs the Debian packages the node uses (runc,
# CNI plugins, iptables; busybox-static and bash-static for the test images) when missing.
# Prints the directory holding bin/. Cold: about 1.5 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")"
need=()
for p in runc:/usr/sbin/runc containernetworking-plugins:/usr/lib/cni/bridge iptables:/usr/sbin/iptables \
  busybox-static:/bin/busybox bash-static:/bin/bash-static; do
  [ -e "${p#*:}" ] || need+=("${p%%:*}")
done
if [ ${#need[@]} -gt 0 ]; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"; } >&2
fi
KEY=$(cat go.mod go.sum build.sh cmd/pause/main.go | sha256sum | cut -c1-16)
OUT=${GANTRY_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gantry/node}/$KEY
if [ -x "$OUT/bin/containerd" ] && [ -x "$OUT/bin/crane" ] && [ -x "$OUT/bin/pause" ]; then echo "$OUT"; exit 0; fi
mkdir -p "$(dirname "$OUT")"
TMP=$(mktemp -d "$OUT.tmp.XXXXXX")
t0=$(date +%s)
go mod download >&2
CV=$(go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
CGO_ENABLED=0 go build -trimpath -tags 'no_btrfs no_devmapper no_zfs' \
  -ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=$CV" -o "$TMP/bin/" \
  github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
  github.com/containerd/containerd/v2/cmd/ctr >&2
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$TMP/bin/" github.com/google/go-containerregistry/cmd/crane ./cmd/pause >&2
if [ -x "$OUT/bin/containerd" ]; then rm -rf "$TMP"; else rm -rf "$OUT" && mv "$TMP" "$OUT"; fi
echo "built containerd $CV, crane and pause in $(( $(date +%s) - t0 ))s" >&2
echo "$OUT"
