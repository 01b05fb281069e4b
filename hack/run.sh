#!/usr/bin/env bash
# make run: brings up the local cluster and the workload cluster beside it
# (hack/cluster/workload.sh), installs the CRDs, starts `loom run` on
# templates/, registers the workload cluster as "workload" and starts a
# second `loom run` on examples/clusters/ (a set whose Greeting places a
# ConfigMap in each cluster), applies the examples, and shows what to try.
# In a terminal it then follows both Looms' logs until Ctrl-C, which stops
# them; otherwise they keep running in the background (stop them with
# `make stop` or `make cluster-down`). .cluster/loom.pid holds both pids.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export KUBECONFIG="$ROOT/.cluster/kubeconfig"
STATE="$ROOT/.cluster"
PIDFILE="$STATE/loom.pid"
LOG="$STATE/logs/loom.log"
CLUSTERS_LOG="$STATE/logs/loom-clusters.log"
WORKLOAD_KUBECONFIG="$ROOT/.cluster-workload/kubeconfig"

# The local cluster first: its up builds the binaries both use.
hack/cluster/cluster.sh up
hack/cluster/workload.sh up
# The shipped MyResource serves v1 beside v1alpha1 through Loom's conversion
# webhook: its CRD is generated to point at the Loom below (on 127.0.0.1:9443,
# loom run's default) and applied as Loom's own (field manager loom), so that
# Loom injects its CA into it. The certificate's Secret goes in loom-system.
kubectl create namespace loom-system --dry-run=client -o yaml | kubectl apply -f - >/dev/null
bin/loom crd -t templates/myresource --webhook-url https://127.0.0.1:9443/convert |
  kubectl apply --server-side --field-manager=loom --force-conflicts -f - >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/myresources.example.loom.dev >/dev/null

# stop_looms stops the Looms a previous make run started (one pid a line).
stop_looms() {
  local pid
  [[ -f $PIDFILE ]] || return 0
  for pid in $(cat "$PIDFILE"); do
    if kill -0 "$pid" 2>/dev/null; then
      echo "Stopping Loom (pid $pid)"
      kill "$pid"
      while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    fi
  done
  rm -f "$PIDFILE"
}
stop_looms
mkdir -p "$STATE/logs"
setsid nohup bin/loom run --templates templates/ --kubeconfig "$KUBECONFIG" \
  --metrics-bind-address 127.0.0.1:18080 >"$LOG" 2>&1 &
echo $! >"$PIDFILE"
echo "Loom is running (pid $!); log: $LOG; metrics: http://127.0.0.1:18080/metrics"

# The workload cluster, registered in Loom's namespace, and a second Loom on
# the example set that places children there. It installs its parent's CRD
# (Greeting) from the set's schema.
bin/loom cluster add workload --from-kubeconfig "$WORKLOAD_KUBECONFIG" --kubeconfig "$KUBECONFIG"
setsid nohup bin/loom run --templates examples/clusters/ --install-crds --loom-namespace loom-system \
  --kubeconfig "$KUBECONFIG" --metrics-bind-address 127.0.0.1:18082 >"$CLUSTERS_LOG" 2>&1 &
echo $! >>"$PIDFILE"
echo "Loom for examples/clusters/ is running (pid $!); log: $CLUSTERS_LOG; metrics: http://127.0.0.1:18082/metrics"

kubectl apply -f examples/
if ! kubectl wait --for=condition=Ready --timeout=90s myresources --all; then
  echo "Not every MyResource became Ready; Loom's log ends with:" >&2
  tail -n 30 "$LOG" >&2
  exit 1
fi
for _ in $(seq 60); do # until the second Loom has created the Greeting CRD
  kubectl get crd greetings.example.loom.dev >/dev/null 2>&1 && break
  sleep 1
done
kubectl wait --for=condition=Established --timeout=60s crd/greetings.example.loom.dev >/dev/null
kubectl apply -f examples/clusters/greeting.yaml
if ! kubectl wait --for=condition=Ready --timeout=90s greetings --all; then
  echo "The Greeting did not become Ready; its Loom's log ends with:" >&2
  tail -n 30 "$CLUSTERS_LOG" >&2
  exit 1
fi
echo
kubectl get myresources,greetings
echo
echo "The Greeting's ConfigMap in the workload cluster:"
kubectl --kubeconfig "$WORKLOAD_KUBECONFIG" get cm greeting -n default
echo
cat <<MSG
Try:
  export KUBECONFIG=$KUBECONFIG
  kubectl get myresources                  # Ready, State, Age
  kubectl describe myresource web          # conditions, children, events
  kubectl get deploy,svc,cm -l app.kubernetes.io/managed-by=loom
  kubectl patch myresource web --type merge -p '{"spec":{"replicas":5}}'
  kubectl get myresources.v1.example.loom.dev web -o yaml   # the same parent in v1, through Loom's conversion webhook
  rm -rf /tmp/loom-edit; cp -r templates/myresource /tmp/loom-edit; \$EDITOR /tmp/loom-edit/deployment.yaml
  bin/loom diff -t /tmp/loom-edit          # what that edit would change, before Loom applies it
  \$EDITOR templates/myresource/deployment.yaml   # e.g. add a label: every Deployment follows, no restart
  kubectl get deploy -w
  kubectl get cm greeting -o yaml          # the Greeting's child here ...
  kubectl --kubeconfig .cluster-workload/kubeconfig get cm greeting -o yaml   # ... and in the workload cluster
  kubectl patch greeting greeting --type merge -p '{"spec":{"message":"hi"}}'   # reaches both clusters
  bin/loom cluster list                    # the registered workload cluster, and whether it answers
Stop both Looms with 'make stop', and the clusters with 'make cluster-down'.
MSG

if [[ -t 0 && -t 1 ]]; then
  echo
  echo "Following both Looms' logs; Ctrl-C stops them (the clusters stay up)."
  trap 'stop_looms >/dev/null; exit 0' INT TERM
  tail -n +1 -f "$LOG" "$CLUSTERS_LOG" &
  wait $!
fi
