package cluster

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// Every port a cluster listens on lies below Linux's default range of
// ephemeral ports (ip_local_port_range, 32768-60999): a port in that range
// can be held, at the moment a cluster starts, by any outgoing connection
// on the machine (Loom's own, the tests'), and etcd then fails to start
// with "address already in use". That happened to the workload cluster's
// etcd peer port, 33800.
func TestClusterPortsAreNotEphemeral(t *testing.T) {
	const lowestEphemeral = 32768
	port := regexp.MustCompile(`CLUSTER_(?:ETCD|ETCD_PEER|APISERVER)_PORT(?:=|:-)(\d+)`)
	for _, f := range []string{"hack/cluster/cluster.sh", "hack/cluster/workload.sh", "Makefile"} {
		b, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		found := port.FindAllSubmatch(b, -1)
		if len(found) == 0 {
			t.Errorf("%s: no cluster port found", f)
		}
		for _, m := range found {
			if p, _ := strconv.Atoi(string(m[1])); p >= lowestEphemeral {
				t.Errorf("%s: %s: port %d is in the ephemeral range (from %d), where an outgoing connection may hold it", f, m[0], p, lowestEphemeral)
			}
		}
	}
}
