package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestPickInformer(t *testing.T) {
	cms := schema.GroupResource{Resource: "configmaps"}
	kind := informerKey{gr: cms, namespace: "team-a"}
	named := func(name string) informerKey { k := kind; k.name = name; return k }
	tests := []struct {
		name    string
		lookup  string
		running []informerKey
		named   int
		want    informerKey
	}{
		{name: "a first name gets an informer of its own", lookup: "platform", want: named("platform")},
		{name: "a name whose informer runs keeps it", lookup: "platform", running: []informerKey{named("platform"), kind}, named: maxNamedInformers, want: named("platform")},
		{name: "a list takes the kind's informer", lookup: "", running: []informerKey{named("platform")}, named: 1, want: kind},
		{name: "once the kind's informer runs, new names use it", lookup: "other", running: []informerKey{kind}, want: kind},
		{name: "below the bound, a new name gets its own", lookup: "other", running: []informerKey{named("platform")}, named: maxNamedInformers - 1, want: named("other")},
		{name: "at the bound, a new name starts the kind's", lookup: "other", named: maxNamedInformers, want: kind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			running := func(k informerKey) bool {
				for _, r := range tt.running {
					if r == k {
						return true
					}
				}
				return false
			}
			got := pickInformer(kind, tt.lookup, running, tt.named)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(informerKey{})); diff != "" {
				t.Errorf("pickInformer (-want +got):\n%s", diff)
			}
		})
	}
}
