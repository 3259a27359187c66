#!/usr/bin/env bash
# Builds a real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler), kwok (simulated nodes), the kubelet (a real node, hack/node) and kubectl
# from the Go module proxy, once per
# version set: binaries are cached outside the repo, keyed by this module's go.sum.
# Prints the directory holding the binaries and kwok-stages.yaml.
# Cold: about 1 minute of downloads and 6-12 minutes of compiling on 2 cores.
set -euo pipefail
cd "$(dirname "$0")"
KEY=$(cat go.mod go.sum build.sh | sha256sum | cut -c1-16)
OUT=${GANTRY_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gantry/k8s}/$KEY
if [ -x "$OUT/bin/kubelet" ] && [ -x "$OUT/bin/kwok" ] && [ -f "$OUT/kwok-stages.yaml" ]; then echo "$OUT"; exit 0; fi
# A private build directory: two concurrent builds (make k8s-tools beside a test) must not
# move each other's half-written output.
mkdir -p "$(dirname "$OUT")"
TMP=$(mktemp -d "$OUT.tmp.XXXXXX")
mkdir -p "$TMP/bin"
t0=$(date +%s)
go mod download >&2
KV=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
MINOR=$(echo "$KV" | cut -d. -f2)
# Version stamping is required: kubectl and client-go reject an unversioned server.
LD="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LD="$LD -X $p.gitVersion=$KV -X $p.gitMajor=1 -X $p.gitMinor=$MINOR -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done
go build -trimpath -ldflags="$LD" -o "$TMP/bin/" ./cmd/etcd \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl k8s.io/kubernetes/cmd/kubelet \
  sigs.k8s.io/kwok/cmd/kwok >&2
K=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
{ for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    cat "$K/kustomize/stage/$f"; echo '---'; done; } > "$TMP/kwok-stages.yaml"
if [ -x "$OUT/bin/kwok" ]; then rm -rf "$TMP"; else rm -rf "$OUT" && mv "$TMP" "$OUT"; fi
echo "built Kubernetes $KV tools in $(( $(date +%s) - t0 ))s" >&2
echo "$OUT"
