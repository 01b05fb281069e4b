#!/usr/bin/env bash
# workload.sh - cluster.sh for the workload cluster: a second, bare control
# plane (etcd + kube-apiserver) beside the local one, in .cluster-workload on
# ports that clash with neither .cluster nor .cluster-scale, that the tests
# and `make run` place children in as a registered workload cluster
# (issue 34). Its kubeconfig is .cluster-workload/kubeconfig.
#
# Usage: hack/cluster/workload.sh up|down|status|restart NAME|stop NAME|start NAME|env (as cluster.sh)
#
# The Makefile (make cluster, cluster-workload, cluster-workload-down) and
# hack/e2e.sh call it, so the state folder and the ports are said once.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export CLUSTER_STATE=${WORKLOAD_STATE:-$ROOT/.cluster-workload}
export CLUSTER_COMPONENTS="etcd kube-apiserver"
export CLUSTER_ETCD_PORT=24790 CLUSTER_ETCD_PEER_PORT=24800 CLUSTER_APISERVER_PORT=26443
exec "$HERE/cluster.sh" "$@"
