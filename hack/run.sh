#!/usr/bin/env bash
# make run: brings up the local cluster, installs the CRDs, starts `loom run`
# on templates/, applies the examples, and shows what to try. In a terminal
# it then follows Loom's log until Ctrl-C, which stops Loom; otherwise Loom
# keeps running in the background (stop it with `make stop` or
# `make cluster-down`).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export KUBECONFIG="$ROOT/.cluster/kubeconfig"
STATE="$ROOT/.cluster"
PIDFILE="$STATE/loom.pid"
LOG="$STATE/logs/loom.log"

hack/cluster/cluster.sh up
kubectl apply --server-side -f crds/ >/dev/null
kubectl wait --for=condition=Established --timeout=60s -f crds/ >/dev/null

if [[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
  echo "Restarting Loom (pid $(cat "$PIDFILE"))"
  kill "$(cat "$PIDFILE")"
  while kill -0 "$(cat "$PIDFILE")" 2>/dev/null; do sleep 0.1; done
fi
mkdir -p "$STATE/logs"
setsid nohup bin/loom run --templates templates/ --kubeconfig "$KUBECONFIG" \
  --metrics-bind-address 127.0.0.1:18080 >"$LOG" 2>&1 &
echo $! >"$PIDFILE"
echo "Loom is running (pid $(cat "$PIDFILE")); log: $LOG; metrics: http://127.0.0.1:18080/metrics"

kubectl apply -f examples/
if ! kubectl wait --for=condition=Ready --timeout=90s myresources --all; then
  echo "Not every MyResource became Ready; Loom's log ends with:" >&2
  tail -n 30 "$LOG" >&2
  exit 1
fi
echo
kubectl get myresources
echo
cat <<MSG
Try:
  export KUBECONFIG=$KUBECONFIG
  kubectl get myresources                  # Ready, State, Age
  kubectl describe myresource web          # conditions, children, events
  kubectl get deploy,svc,cm -l app.kubernetes.io/managed-by=loom
  kubectl patch myresource web --type merge -p '{"spec":{"replicas":5}}'
  rm -rf /tmp/loom-edit; cp -r templates/myresource /tmp/loom-edit; \$EDITOR /tmp/loom-edit/deployment.yaml
  bin/loom diff -t /tmp/loom-edit          # what that edit would change, before Loom applies it
  \$EDITOR templates/myresource/deployment.yaml   # e.g. add a label: every Deployment follows, no restart
  kubectl get deploy -w
Stop Loom with 'make stop', and the cluster with 'make cluster-down'.
MSG

if [[ -t 0 && -t 1 ]]; then
  echo
  echo "Following Loom's log; Ctrl-C stops Loom (the cluster stays up)."
  trap 'kill "$(cat "$PIDFILE")" 2>/dev/null; rm -f "$PIDFILE"; exit 0' INT TERM
  tail -n +1 -f "$LOG" &
  wait $!
fi
