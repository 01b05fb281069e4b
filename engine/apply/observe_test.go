package apply

import (
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/object"
)

// BenchmarkObserve is what every watch event of a child costs the
// Applier: Observe of a child it has a record of.
func BenchmarkObserve(b *testing.B) {
	a := New(nil, nil, "loom")
	ref := object.Ref{GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}, Namespace: "ns", Name: "web"}
	a.remember(ref, newRecord("h", "u1", "7", "", "f"))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		a.Observe(ref, strconv.Itoa(i%16))
	}
}
