#!/usr/bin/env bash
# Start etcd + kube-apiserver + kube-controller-manager + kube-scheduler + kwok on loopback.
# Usage: up.sh <bindir> <statedir>   (bindir from build.sh: $(build.sh)/bin)
# Ports: API_PORT (16443), ETCD_PORT (23790), ETCD_PEER_PORT (23800). KWOK=0: no kwok and no fake
# node, for a real kubelet (hack/node/up.sh).
# Writes <statedir>/kubeconfig and <statedir>/pids. Stop with down.sh <statedir>.
set -euo pipefail
BIN=${1:?bindir}; ST=${2:?statedir}
ETCD_PORT=${ETCD_PORT:-23790}; ETCD_PEER_PORT=${ETCD_PEER_PORT:-23800}
API_PORT=${API_PORT:-16443}
KWOK_STAGES=${KWOK_STAGES:-$BIN/../kwok-stages.yaml}
mkdir -p "$ST"/{etcd,pki,logs}
: > "$ST/pids"
t0=$(date +%s)

# --- credentials: service-account signing key + static admin token (system:masters)
if [ ! -f "$ST/pki/sa.key" ]; then
  openssl genrsa -out "$ST/pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$ST/pki/sa.key" -pubout -out "$ST/pki/sa.pub" 2>/dev/null
fi
TOKEN=${TOKEN:-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')}
echo "$TOKEN,admin,admin,system:masters" > "$ST/pki/tokens.csv"
# A second user with no permissions, to test Authorization failures.
NOBODY_TOKEN=${NOBODY_TOKEN:-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')}
echo "$NOBODY_TOKEN,nobody,nobody" >> "$ST/pki/tokens.csv"
cat > "$ST/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:${API_PORT}
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: ${TOKEN}
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
EOF

start() { # name, cmd...
  local name=$1; shift
  "$@" >"$ST/logs/$name.log" 2>&1 &
  echo "$name $!" >> "$ST/pids"
}

# --- etcd
start etcd "$BIN/etcd" --name default --data-dir "$ST/etcd" \
  --listen-client-urls "http://127.0.0.1:${ETCD_PORT}" --advertise-client-urls "http://127.0.0.1:${ETCD_PORT}" \
  --listen-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" --initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-cluster "default=http://127.0.0.1:${ETCD_PEER_PORT}" \
  --quota-backend-bytes 2147483648 --unsafe-no-fsync
for i in $(seq 1 100); do curl -sf "http://127.0.0.1:${ETCD_PORT}/health" >/dev/null && break; sleep 0.1; done

# --- kube-apiserver
start kube-apiserver "$BIN/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:${ETCD_PORT}" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "${API_PORT}" \
  --cert-dir "$ST/pki" \
  --token-auth-file "$ST/pki/tokens.csv" \
  --authorization-mode Node,RBAC \
  --service-account-issuer https://kubernetes.default.svc \
  --service-account-key-file "$ST/pki/sa.pub" \
  --service-account-signing-key-file "$ST/pki/sa.key" \
  --service-cluster-ip-range 10.96.0.0/16 \
  --enable-priority-and-fairness=false \
  --profiling=false \
  --allow-privileged=true \
  --kubelet-preferred-address-types Hostname,InternalIP
for i in $(seq 1 600); do
  curl -sfk -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:${API_PORT}/readyz" >/dev/null && break; sleep 0.1
done
curl -sfk -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:${API_PORT}/readyz" >/dev/null || { echo "apiserver not ready"; tail -30 "$ST/logs/kube-apiserver.log"; exit 1; }

# --- controllers, scheduler, kwok (fake kubelet)
# kwok renews the node's status about once a minute; a long grace period keeps the node (and
# so every pod) Ready between renewals, however long the cluster runs.
start kube-controller-manager "$BIN/kube-controller-manager" \
  --kubeconfig "$ST/kubeconfig" --leader-elect=false --secure-port=0 \
  --service-account-private-key-file "$ST/pki/sa.key" --root-ca-file "$ST/pki/apiserver.crt" \
  --use-service-account-credentials=false \
  --node-monitor-grace-period=1h
start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$ST/kubeconfig" --leader-elect=false --secure-port=0
KC() { "$BIN/kubectl" --kubeconfig "$ST/kubeconfig" "$@"; }
if [ "${KWOK:-1}" = 0 ]; then # a real kubelet joins instead (hack/node/up.sh)
  for i in $(seq 1 300); do KC -n default get serviceaccount default >/dev/null 2>&1 && break; sleep 0.1; done
  echo "control plane ready in $(( $(date +%s) - t0 ))s; KUBECONFIG=$ST/kubeconfig" >&2
  exit 0
fi
start kwok "$BIN/kwok" --kubeconfig "$ST/kubeconfig" --config "$KWOK_STAGES" \
  --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
  --node-ip 127.0.0.1 --cidr 10.244.0.1/16 --server-address ""

# --- one fake node managed by kwok
KC apply -f - >/dev/null <<'EOF2'
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-0
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {kubernetes.io/hostname: kwok-node-0, kubernetes.io/os: linux, kubernetes.io/arch: amd64, type: kwok}
status:
  allocatable: {cpu: "64", memory: 256Gi, pods: "500"}
  capacity: {cpu: "64", memory: 256Gi, pods: "500"}
EOF2
# wait: node Ready and the default ServiceAccount exists (pods are rejected before it does)
for i in $(seq 1 300); do
  r=$(KC get node kwok-node-0 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)
  KC -n default get serviceaccount default >/dev/null 2>&1 && [ "$r" = True ] && break; sleep 0.1
done
echo "control plane ready in $(( $(date +%s) - t0 ))s; KUBECONFIG=$ST/kubeconfig" >&2
