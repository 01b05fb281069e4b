package render_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/depend"
	"github.com/loom-operator/loom/engine/render"
)

// job is a Job of the web chart's hooks as the cluster holds it.
func job(name string, complete bool) *unstructured.Unstructured {
	j := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": name, "namespace": "team-a", "generation": int64(1),
			// The run of the release's first revision.
			"annotations": map[string]any{"loom.dev/hook-revision": "1"},
			// The parent's child, as Loom applied it: a lookup of a kind the
			// set does not declare finds only the parent's own children.
			"ownerReferences": []any{map[string]any{"apiVersion": "example.loom.dev/v1alpha1", "kind": "WebApp", "name": "shop", "uid": "u-shop", "controller": true}}},
		// Started and running: kstatus calls such a Job Current.
		"status": map[string]any{"active": int64(1), "startTime": "2026-11-26T10:00:00Z"},
	}}
	if complete {
		j.Object["status"] = map[string]any{"succeeded": int64(1), "conditions": []any{map[string]any{"type": "Complete", "status": "True"}}}
	}
	return j
}

// Hooks run in Helm's order, on Loom's dependency stage: the pre-install
// Jobs first, by weight; every ordinary child once they are complete; the
// post-install hook once every ordinary child is ready; a pre-delete hook
// never.
func TestChartHooksWait(t *testing.T) {
	set, err := render.Load("testdata/chartsets/web")
	if err != nil {
		t.Fatal(err)
	}
	parent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.loom.dev/v1alpha1", "kind": "WebApp",
		"metadata": map[string]any{"name": "shop", "namespace": "team-a", "uid": "u-shop", "generation": int64(1)},
		"spec":     map[string]any{"db": map[string]any{"enabled": false}},
	}}
	ordinary := []string{"ConfigMap/shop-redis", "ConfigMap/shop-web-files", "Deployment/shop-web", "Secret/shop-web-files", "Service/shop-metrics", "Service/shop-web"}
	tests := []struct {
		name    string
		cluster []*unstructured.Unstructured
		want    []string
		waits   []string
	}{
		{name: "nothing yet: the lightest pre-install hook first",
			want:  []string{"Job/shop-web-early"},
			waits: []string{"Job shop-web-migrate waits for Job shop-web-early: not found yet", "Deployment shop-web waits for Job shop-web-early: not found yet"}},
		{name: "the first hook running",
			cluster: []*unstructured.Unstructured{job("shop-web-early", false)},
			want:    []string{"Job/shop-web-early"},
			waits:   []string{"Job shop-web-migrate waits for Job shop-web-early"}},
		{name: "the first hook complete: the second",
			cluster: []*unstructured.Unstructured{job("shop-web-early", true)},
			want:    []string{"Job/shop-web-early", "Job/shop-web-migrate"},
			waits:   []string{"Deployment shop-web waits for Job shop-web-migrate: not found yet"}},
		{name: "both complete: the ordinary children, the post-install hook waits for them",
			cluster: []*unstructured.Unstructured{job("shop-web-early", true), job("shop-web-migrate", true)},
			want:    append([]string{"Job/shop-web-early", "Job/shop-web-migrate"}, ordinary...),
			waits:   []string{"ConfigMap shop-web-installed waits for "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := set.RenderWith(parent, render.NewObjectsReader(tt.cluster))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range out.Children {
				if strings.HasSuffix(c.GetName(), "goodbye") || strings.HasSuffix(c.GetName(), "test-connection") {
					t.Errorf("%s %s is rendered: Loom never applies a pre-delete or test hook", c.GetKind(), c.GetName())
				}
			}
			plan := depend.Decide(out, set.Config.Readiness)
			var got []string
			for _, c := range plan.Apply {
				got = append(got, c.GetKind()+"/"+c.GetName())
			}
			sort.Strings(got)
			want := append([]string(nil), tt.want...)
			sort.Strings(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("applied now (-want +got):\n%s", diff)
			}
			var waits []string
			for _, w := range plan.Waits {
				waits = append(waits, w.Message)
			}
			all := strings.Join(waits, "\n")
			for _, w := range tt.waits {
				if !strings.Contains(all, w) {
					t.Errorf("waits lack %q:\n%s", w, all)
				}
			}
		})
	}
}

// A chart's hooks run per release revision: install hooks on the install,
// upgrade hooks on an upgrade (a new digest), each stamped with its
// revision; a hook the parent's status.release says is done in this
// revision is neither rendered nor waited for.
func TestChartHooksByRelease(t *testing.T) {
	set, err := render.Load("testdata/chartsets/web")
	if err != nil {
		t.Fatal(err)
	}
	parent := func(status map[string]any) *unstructured.Unstructured {
		p := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.loom.dev/v1alpha1", "kind": "WebApp",
			"metadata": map[string]any{"name": "shop", "namespace": "team-a", "uid": "u-shop", "generation": int64(7)},
			"spec":     map[string]any{"db": map[string]any{"enabled": false}},
		}}
		if status != nil {
			p.Object["status"] = status
		}
		return p
	}
	first, err := set.RenderWith(parent(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	digest := first.Release.Digest
	migrate := map[string]any{"group": "batch", "kind": "Job", "namespace": "team-a", "name": "shop-web-migrate", "phase": "Succeeded"}
	tests := []struct {
		name     string
		status   map[string]any
		cluster  []*unstructured.Unstructured
		revision int64
		hooks    []string // the hooks rendered, with their revision
		applied  string   // one child applied now, or "" for none checked
		held     string   // one child that waits, or "" for none checked
		done     []string // the hooks done in this revision
	}{
		{name: "no record: the install", revision: 1,
			hooks: []string{"ConfigMap/shop-web-installed@1", "Job/shop-web-early@1", "Job/shop-web-migrate@1"}},
		{name: "recorded at another digest: an upgrade, without the install-only hook", revision: 3,
			status: map[string]any{"release": map[string]any{"revision": int64(2), "digest": "other"}},
			hooks:  []string{"ConfigMap/shop-web-installed@3", "Job/shop-web-migrate@3"}},
		{name: "the pre-upgrade hook done in this revision: not rendered, the Deployment goes ahead", revision: 3,
			status:  map[string]any{"release": map[string]any{"revision": int64(3), "digest": digest, "hooks": []any{migrate}}},
			hooks:   []string{"ConfigMap/shop-web-installed@3"},
			done:    []string{"Job/shop-web-migrate"},
			applied: "Deployment/shop-web"},
		{name: "the pre-upgrade Job of the last revision complete: the Deployment waits for this one", revision: 3,
			status:  map[string]any{"release": map[string]any{"revision": int64(2), "digest": "other"}},
			cluster: []*unstructured.Unstructured{job("shop-web-early", true), job("shop-web-migrate", true)},
			hooks:   []string{"ConfigMap/shop-web-installed@3", "Job/shop-web-migrate@3"},
			held:    "Deployment/shop-web"},
		{name: "done in an earlier revision: runs again", revision: 4,
			status: map[string]any{"release": map[string]any{"revision": int64(3), "digest": "other", "hooks": []any{migrate}}},
			hooks:  []string{"ConfigMap/shop-web-installed@4", "Job/shop-web-migrate@4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := set.RenderWith(parent(tt.status), render.NewObjectsReader(tt.cluster))
			if err != nil {
				t.Fatal(err)
			}
			if out.Release.Revision != tt.revision {
				t.Errorf("revision %d, want %d", out.Release.Revision, tt.revision)
			}
			var hooks []string
			for _, c := range out.Children {
				if c.GetAnnotations()["helm.sh/hook"] != "" {
					hooks = append(hooks, c.GetKind()+"/"+c.GetName()+"@"+c.GetAnnotations()["loom.dev/hook-revision"])
				}
			}
			sort.Strings(hooks)
			if diff := cmp.Diff(tt.hooks, hooks); diff != "" {
				t.Errorf("hooks (-want +got):\n%s", diff)
			}
			var running, done []string
			for _, h := range out.Hooks {
				if h.Done {
					done = append(done, h.Ref.GroupKind.Kind+"/"+h.Ref.Name)
				} else {
					running = append(running, h.Ref.GroupKind.Kind+"/"+h.Ref.Name)
				}
			}
			if len(running) != len(tt.hooks) {
				t.Errorf("Output.Hooks has %v to run, want %d", running, len(tt.hooks))
			}
			// A done hook is still handed to the controller, for its
			// delete policy.
			if diff := cmp.Diff(tt.done, done); diff != "" {
				t.Errorf("done hooks (-want +got):\n%s", diff)
			}
			if tt.held != "" {
				plan := depend.Decide(out, set.Config.Readiness)
				for _, c := range plan.Apply {
					if c.GetKind()+"/"+c.GetName() == tt.held {
						t.Errorf("%s is applied now: it must wait for this revision's run of the hook", tt.held)
					}
				}
			}
			if tt.applied != "" {
				plan := depend.Decide(out, set.Config.Readiness)
				found := false
				for _, c := range plan.Apply {
					found = found || c.GetKind()+"/"+c.GetName() == tt.applied
				}
				if !found {
					t.Errorf("%s is not applied now; waits: %v", tt.applied, plan.Waits)
				}
			}
		})
	}
}
