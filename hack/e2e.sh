#!/usr/bin/env bash
# Runs the e2e tests against the local cluster. Reuses a cluster that is
# already up; otherwise starts one and stops it at the end, pass or fail.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CLUSTER="$ROOT/hack/cluster/cluster.sh"
started=0
if ! "$CLUSTER" status >/dev/null 2>&1; then
  "$CLUSTER" up
  started=1
fi
cleanup() {
  if [[ $started == 1 ]]; then
    "$CLUSTER" down
  fi
}
trap cleanup EXIT
export KUBECONFIG="$ROOT/.cluster/kubeconfig"
# A Loom left running by `make run` watches every namespace and would fight
# the tests' own controllers.
if [[ -f $ROOT/.cluster/loom.pid ]]; then
  echo "Stopping the Loom started by make run, which would interfere with the tests"
  kill "$(cat "$ROOT/.cluster/loom.pid")" 2>/dev/null || true
  rm -f "$ROOT/.cluster/loom.pid"
fi
cd "$ROOT"
go test -tags e2e -count=1 -timeout 30m "$@" ./test/e2e/...
