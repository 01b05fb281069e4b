#!/usr/bin/env bash
# Runs the e2e tests against the local cluster: the parallel suite
# (test/e2e), then the fault suite (test/faults), which restarts cluster
# components and so runs alone, one test at a time. E2E_SUITES picks
# suites ("e2e faults" by default). Reuses a cluster that is already up;
# otherwise starts one and stops it at the end, pass or fail. Arguments go
# to go test.
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
for suite in ${E2E_SUITES:-e2e faults}; do
  case $suite in
  e2e) go test -tags e2e -count=1 -timeout 30m "$@" ./test/e2e/... ;;
  faults) go test -tags e2e -count=1 -timeout 30m "$@" ./test/faults/... ;;
  *) echo "e2e.sh: unknown suite $suite in E2E_SUITES (want e2e, faults)" >&2; exit 2 ;;
  esac
done
