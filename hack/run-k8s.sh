#!/usr/bin/env bash
# `make run-k8s`: runs examples/k8s/pipeline.yaml against a local Kubernetes control plane
# (etcd, kube-apiserver, controllers, kwok; built once and cached by hack/k8s/build.sh) on the
# embedded Temporal server, approves the production sign-off as a demo user, and shows the
# cluster afterwards. State lives in .gantry/; the control plane is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-.gantry}
ST=$DATA/k8s
G=bin/gantry
K8S=$(hack/k8s/build.sh)
hack/k8s/down.sh "$ST" >/dev/null 2>&1 || true
API_PORT=${API_PORT:-16443} hack/k8s/up.sh "$K8S/bin" "$ST"
trap 'hack/k8s/down.sh "$ST" >/dev/null 2>&1 || true' EXIT
export KUBECONFIG=$PWD/$ST/kubeconfig
kubectl() { "$K8S/bin/kubectl" "$@"; }

# A release manager who may approve the production sign-off.
TOKEN=$($G user add demo --group release_managers --data-dir "$DATA" | grep -o 'gty_[A-Za-z0-9_-]*' | head -1)

# One embedded Temporal server and worker for the run and the approval, as `gantry server`.
$G server --data-dir "$DATA" --listen "127.0.0.1:${API_LISTEN_PORT:-18088}" > "$DATA/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null; hack/k8s/down.sh "$ST" >/dev/null 2>&1 || true' EXIT
for i in $(seq 1 300); do [ -s "$DATA/server.json" ] && break; sleep 0.2; done

$G run examples/k8s/pipeline.yaml --data-dir "$DATA" --logs "$@" &
RUN=$!
# Approve when the sign-off waits (as a second terminal would).
for i in $(seq 1 600); do
  line=$($G approvals --data-dir "$DATA" 2>/dev/null | grep prod_signoff || true)
  if [ -n "$line" ]; then
    exec_id=$(echo "$line" | awk '{print $1}')
    GANTRY_TOKEN=$TOKEN $G approve "$exec_id" --data-dir "$DATA" --comment "approved by make run-k8s"
    break
  fi
  kill -0 $RUN 2>/dev/null || break
  sleep 0.5
done
status=0
wait $RUN || status=$?
echo
kubectl get deploy,svc,cm -n gantry-dev
kubectl get deploy,svc,cm -n gantry-prod
exit $status
