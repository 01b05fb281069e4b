//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/test/env"
)

// lookupHeld is what a Loom's lookups hold, from its gauges.
type lookupHeld struct{ informers, watched, cached float64 }

func (l *loom) lookupHeld(t *testing.T) lookupHeld {
	return lookupHeld{
		informers: l.counter(t, "loom_lookup_informers", nil),
		watched:   l.counter(t, "loom_lookup_watched_objects", nil),
		cached:    l.counter(t, "loom_lookup_cached_objects", nil),
	}
}

// waitHeld waits until l's lookups hold want.
func waitHeld(t *testing.T, l *loom, what string, want lookupHeld) {
	t.Helper()
	eventually(t, 60*time.Second, what, func(context.Context) error {
		if got := l.lookupHeld(t); got != want {
			return fmt.Errorf("lookups hold %+v, want %+v", got, want)
		}
		return nil
	})
}

// Parents that each look up a Secret of their own ("{{ .Name }}-db") make
// Loom watch each name, then the whole kind once 32 names are read; when
// fewer than 16 parents remain, each name gets its own informer again and
// the kind's stops; when the parents are deleted, every informer stops and
// the Secrets' JSON is dropped. A set removed takes its parents' lookups with
// it the same way.
func TestLookupInformersAreReleased(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	const parents = 36 // past the 32 names that get an informer each
	ns := e.NewNamespace(t)
	root := lookupSet(t, "lookups:\n  - apiVersion: v1\n    kind: Secret\n", map[string]string{
		"configmap.yaml": `
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}
data:
  user: {{ dig "data" "user" "none" (lookup "v1" "Secret" .Namespace (printf "%s-db" .Name)) | quote }}
`,
	})
	l := startLoom(t, root, ns, loomOptions{quiet: true})
	// create makes n parents named prefix0, prefix1..., each with its Secret.
	create := func(prefix string, n int) {
		for i := range n {
			createObject(t, secretGVR, ns, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s%d-db\ndata:\n  user: dXNlcg==\n", prefix, i))
			createParentAs(t, ns, "minimal", fmt.Sprintf("%s%d", prefix, i))
		}
		eventually(t, 120*time.Second, "every parent's ConfigMap has its Secret's user", func(ctx context.Context) error {
			for i := range n {
				cm, err := e.Get(ctx, configMapGVR, ns, fmt.Sprintf("%s%d", prefix, i))
				if err != nil {
					return err
				}
				if u, _, _ := unstructured.NestedString(cm.Object, "data", "user"); u != "dXNlcg==" {
					return fmt.Errorf("%s%d: user %q", prefix, i, u)
				}
			}
			return nil
		})
	}
	deleteAll := func(prefix string, from, to int) {
		for i := from; i < to; i++ {
			if err := e.Dyn.Resource(myresGVR).Namespace(ns).Delete(context.Background(), fmt.Sprintf("%s%d", prefix, i), metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}

	create("p", parents)
	// 32 informers of one name each, and the kind's, which serves the rest.
	waitHeld(t, l, "the parents' lookups are held", lookupHeld{informers: 33, watched: parents, cached: parents})
	// Under 16 names, each gets its informer back, and the kind's stops.
	deleteAll("p", 0, parents-11)
	waitHeld(t, l, "11 parents' lookups are held, each by an informer of its own", lookupHeld{informers: 11, watched: 11, cached: 11})
	deleteAll("p", parents-11, parents)
	waitHeld(t, l, "nothing is held once the parents are deleted", lookupHeld{})

	create("q", 3)
	waitHeld(t, l, "the new parents' lookups are held", lookupHeld{informers: 3, watched: 3, cached: 3})
	if err := os.RemoveAll(filepath.Join(root, "lookup")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the set is removed", func(context.Context) error {
		if n := l.counter(t, "loom_template_sets", nil); n != 0 {
			return fmt.Errorf("%v sets loaded", n)
		}
		return nil
	})
	waitHeld(t, l, "nothing is held once the set is removed", lookupHeld{})
}
