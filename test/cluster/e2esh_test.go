package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// e2eSandbox is a temporary repository root with a copy of hack/e2e.sh and
// of hack/cluster/workload.sh, fake cluster scripts that log their calls,
// and a fake go on PATH that logs the clusters the tests would be given.
type e2eSandbox struct {
	root, log, path string
}

func newE2ESandbox(t *testing.T) *e2eSandbox {
	t.Helper()
	s := &e2eSandbox{root: t.TempDir()}
	s.log = filepath.Join(s.root, "calls")
	for _, f := range []string{"hack/e2e.sh", "hack/cluster/workload.sh"} {
		b, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(s.root, f), string(b))
	}
	// cluster.sh logs each call with the cluster it is for; status exits
	// with $UP_<cluster> (not up by default), up with $FAIL_<cluster>.
	write(t, filepath.Join(s.root, "hack", "cluster", "cluster.sh"), `#!/usr/bin/env bash
name=$(basename "${CLUSTER_STATE:-.cluster}")
echo "$name $*" >> "$CALLS"
[[ $1 == up && $name == .cluster-workload ]] && echo "  ports $CLUSTER_ETCD_PORT $CLUSTER_ETCD_PEER_PORT $CLUSTER_APISERVER_PORT, $CLUSTER_COMPONENTS" >> "$CALLS"
var=${name//[.-]/_}
case $1 in
status) v=UP$var; exit "${!v:-1}" ;;
up) v=FAIL$var; exit "${!v:-0}" ;;
esac
`)
	bin := filepath.Join(s.root, "fakebin")
	write(t, filepath.Join(bin, "go"), `#!/usr/bin/env bash
echo "go test: KUBECONFIG=${KUBECONFIG#$ROOT/} LOOM_E2E_WORKLOAD_KUBECONFIG=${LOOM_E2E_WORKLOAD_KUBECONFIG#$ROOT/}" >> "$CALLS"
`)
	s.path = bin + string(os.PathListSeparator) + os.Getenv("PATH")
	return s
}

// run runs hack/e2e.sh with env and no stdin, as CI does, and returns its
// exit code and the calls logged.
func (s *e2eSandbox) run(t *testing.T, env ...string) (int, []string) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(s.root, "hack", "e2e.sh"))
	cmd.Env = append(os.Environ(), "PATH="+s.path, "CALLS="+s.log, "ROOT="+s.root, "E2E_SUITES=e2e", "CI=true")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("e2e.sh: %v\n%s", err, out)
	}
	b, err := os.ReadFile(s.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return code, strings.Split(strings.TrimSpace(string(b)), "\n")
}

// hack/e2e.sh (what make test and CI run) starts the local cluster and the
// workload cluster (on its own state folder and ports) when they are not
// up, gives the tests both kubeconfigs, and stops, pass or fail, only the
// clusters it started, the workload one first.
func TestE2EScriptStartsBothClusters(t *testing.T) {
	const tests = "go test: KUBECONFIG=.cluster/kubeconfig LOOM_E2E_WORKLOAD_KUBECONFIG=.cluster-workload/kubeconfig"
	const workloadUp = ".cluster-workload up\n  ports 24790 24800 26443, etcd kube-apiserver"
	cases := []struct {
		name     string
		env      []string
		wantCode int
		want     string
	}{
		{name: "neither up", want: ".cluster status\n.cluster up\n.cluster-workload status\n" + workloadUp + "\n" + tests +
			"\n.cluster-workload down\n.cluster down"},
		{name: "the local one up", env: []string{"UP_cluster=0"},
			want: ".cluster status\n.cluster-workload status\n" + workloadUp + "\n" + tests + "\n.cluster-workload down"},
		{name: "both up", env: []string{"UP_cluster=0", "UP_cluster_workload=0"},
			want: ".cluster status\n.cluster-workload status\n" + tests},
		{name: "the workload one fails to start", env: []string{"FAIL_cluster_workload=1"}, wantCode: 1,
			want: ".cluster status\n.cluster up\n.cluster-workload status\n" + workloadUp + "\n.cluster-workload down\n.cluster down"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, calls := newE2ESandbox(t).run(t, tc.env...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d", code, tc.wantCode)
			}
			if diff := cmp.Diff(strings.Split(tc.want, "\n"), calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}
