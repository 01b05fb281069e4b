#!/usr/bin/env bash
# Runs the e2e tests against the local cluster and the workload cluster
# beside it (hack/cluster/workload.sh, a second bare control plane that
# children in other clusters go to): the parallel suite (test/e2e), then
# the fault suite (test/faults), which restarts cluster components and so
# runs alone, one test at a time. E2E_SUITES picks suites ("e2e faults" by
# default). Reuses a cluster that is already up; otherwise starts it and
# stops it at the end, pass or fail, each of the two on its own. The tests
# find the workload cluster's kubeconfig in LOOM_E2E_WORKLOAD_KUBECONFIG.
# Arguments go to go test.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CLUSTER="$ROOT/hack/cluster/cluster.sh"
WORKLOAD="$ROOT/hack/cluster/workload.sh"
started=() # the scripts of the clusters this run started
cleanup() {
  local c
  for c in "${started[@]}"; do "$c" down || true; done
}
trap cleanup EXIT
# The local cluster first: its up builds the binaries both use.
for c in "$CLUSTER" "$WORKLOAD"; do
  if ! "$c" status >/dev/null 2>&1; then
    started=("$c" "${started[@]}") # stopped in reverse order
    "$c" up
  fi
done
export KUBECONFIG="$ROOT/.cluster/kubeconfig"
export LOOM_E2E_WORKLOAD_KUBECONFIG="$ROOT/.cluster-workload/kubeconfig"
# The Looms left running by `make run` (their pids, one a line) watch every
# namespace and would fight the tests' own controllers.
if [[ -f $ROOT/.cluster/loom.pid ]]; then
  echo "Stopping the Looms started by make run, which would interfere with the tests"
  # shellcheck disable=SC2046 # one pid a line: make run starts two Looms
  kill $(cat "$ROOT/.cluster/loom.pid") 2>/dev/null || true
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
