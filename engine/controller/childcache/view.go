package childcache

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/pack"
)

// View is what a set's status template sees of one child: the rendered
// object (the fields Loom applied, which hold their values while Loom's
// apply stands), with the live object's metadata and status. The cache
// keeps no more of a live child than that (pack.Slim); fields the API
// server fills in spec, such as a Service's clusterIP, are not there.
func View(rendered, live *unstructured.Unstructured) *unstructured.Unstructured {
	live = pack.Slim(live, "") // the same view whether the object came from the cache or an apply
	out := make(map[string]any, len(rendered.Object)+1)
	for k, v := range rendered.Object {
		out[k] = v
	}
	md := map[string]any{}
	if m, ok := rendered.Object["metadata"].(map[string]any); ok {
		for k, v := range m {
			md[k] = v
		}
	}
	if m, ok := live.Object["metadata"].(map[string]any); ok {
		for k, v := range m {
			if k != "annotations" { // the cache keeps only Loom's own
				md[k] = v
			}
		}
	}
	out["metadata"] = md
	if st, ok := live.Object["status"]; ok {
		out["status"] = st
	} else {
		delete(out, "status")
	}
	return &unstructured.Unstructured{Object: out}
}
