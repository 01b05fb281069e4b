package offline

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/render"
)

// DefaultLoomNamespace is the namespace `loom render`, `loom test` and
// `loom diff` take for Loom's own (their --loom-namespace): where the
// Secrets that register workload clusters are. It is the namespace the
// install puts Loom in (deploy/), as `loom rbac` takes it.
const DefaultLoomNamespace = "loom-system"

// secretGVK is the kind of a registration.
var secretGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}

// Clusters reads the workload clusters that reader's Secrets in Loom's
// namespace, loomNamespace, register (cluster.FromSecret): offline, the
// Secrets of the lookups file, as the controller reads them from the
// cluster. A Secret elsewhere registers nothing, as in the cluster. A
// Secret's stringData counts as its data, as the API server stores it, so
// that a file written by hand may give the kubeconfig as text; the
// kubeconfig is never read offline (nothing is placed anywhere). A Secret
// that registers a cluster but cannot be read as a registration is an
// error naming it. A nil reader registers no cluster.
func Clusters(reader render.Reader, loomNamespace string) ([]cluster.Registration, error) {
	if reader == nil {
		return nil, nil
	}
	items, err := reader.List(secretGVK, loomNamespace)
	if err != nil {
		return nil, fmt.Errorf("list the Secrets of namespace %s: %w", loomNamespace, err)
	}
	var regs []cluster.Registration
	for _, item := range items {
		var s corev1.Secret
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item, &s); err != nil {
			return nil, fmt.Errorf("Secret %s/%s: %w", loomNamespace, name(item), err)
		}
		if len(s.StringData) > 0 {
			s.Data = maps.Clone(s.Data)
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			for k, v := range s.StringData {
				s.Data[k] = []byte(v)
			}
		}
		reg, ok, err := cluster.FromSecret(&s, loomNamespace)
		if err != nil {
			return nil, err
		}
		if ok {
			regs = append(regs, reg)
		}
	}
	return regs, nil
}

// name is an object's metadata.name.
func name(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	n, _ := meta["name"].(string)
	return n
}
