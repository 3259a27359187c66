#!/usr/bin/env bash
# `make run-ci-local`: runs examples/ci-local (a `runtime: Docker` CI stage, then a Deployment
# stage) on this machine, no cluster: `gantry run` is the build machine, with a containerd of
# its own for the steps that name an image. Beside it, hack/ci-local serves the registry (the
# steps' images, BuildKit's, and the image the pipeline pushes) and the Git server the codebase
# is cloned from. Containers need root. State lives in .gantry/; everything started here is
# stopped at the end, the deployed app included.
# Ports: 15050 (registry), 15051 (Git), 16379 (the store's portBindings), 18090 (the app).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "make run-ci-local runs containers, which needs root (containerd, runc, CNI): run it as root" >&2
  exit 1
fi
DATA=${DATA:-.gantry}
ST=$DATA/ci-local
mkdir -p "$ST"
NODE=$(hack/node/build.sh)  # containerd, ctr; Debian's runc, CNI plugins, busybox-static
KV=$(hack/ci-local/kv/build.sh)
hack/buildkit/build.sh >/dev/null

# containerd, its socket on a short path (a unix socket's path is at most 108 bytes).
CTRD=$(mktemp -d /tmp/gantry-ci-local.XXXXXX)
SOCK=$CTRD/c.sock
sed "s#@DIR@#$CTRD#g" hack/node/standalone.toml > "$CTRD/config.toml"
export PATH=$NODE/bin:$PATH CONTAINERD_ADDRESS=$SOCK
containerd --config "$CTRD/config.toml" > "$ST/containerd.log" 2>&1 &
CONTAINERD=$!
SERVICES=
cleanup() {
  ctr -n ci-local tasks delete -f app > /dev/null 2>&1 || true
  [ -n "$SERVICES" ] && kill "$SERVICES" 2>/dev/null && wait "$SERVICES" 2>/dev/null
  kill "$CONTAINERD" 2>/dev/null && wait "$CONTAINERD" 2>/dev/null
  pkill -9 -f "containerd-shim-runc-v2 -namespace .* -address $SOCK" 2>/dev/null || true
  for m in $(grep -o " $CTRD/[^ ]*" /proc/self/mounts | sort -r); do umount "$m" 2>/dev/null || true; done
  rm -rf "$CTRD"
}
trap cleanup EXIT
for i in $(seq 1 100); do [ -S "$SOCK" ] && break; sleep 0.1; done

# The registry and the Git server; the clone's password is a Gantry secret, as in production.
export CI_LOCAL_GIT_PASSWORD=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
export GANTRY_SECRET_APP_REPO_TOKEN=$CI_LOCAL_GIT_PASSWORD
go build -o "$ST/ci-local" ./hack/ci-local
"$ST/ci-local" -state "$ST" -kv "$KV" > "$ST/ready" 2> "$ST/ci-local.log" &
SERVICES=$!
for i in $(seq 1 3000); do
  grep -qx ready "$ST/ready" 2>/dev/null && break
  kill -0 "$SERVICES" 2>/dev/null || { echo "hack/ci-local did not start:" >&2; cat "$ST/ci-local.log" >&2; exit 1; }
  sleep 0.2
done

bin/gantry run examples/ci-local/pipeline.yaml --data-dir "$DATA" --logs \
  --containerd "$SOCK" --buildkit-image 127.0.0.1:15050/tools/buildkit:1 \
  --set 'pipeline.properties.ci.codebase.build={type: branch, spec: {branch: main}}' "$@"
echo
exec 3<>/dev/tcp/127.0.0.1/18090 && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && echo "the deployed app answers: $(tail -n 1 <&3)"
