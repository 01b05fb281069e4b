package statuswriter

// Unit tests of the status of a parent stored in another version than
// the hub its templates read: computed against the hub, converted to the
// stored version, and written only when that differs from what is stored.

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/status"
)

// statusMove converts between the hub v1 (status.url) and v1alpha1
// (status.link), as a set's rename move of a status field would; with
// fail, it fails as a conversion with a bug does.
type statusMove struct{ fail bool }

func (m statusMove) Convert(obj *unstructured.Unstructured, to string) (*unstructured.Unstructured, error) {
	if m.fail {
		return nil, errors.New("loom.yaml:14: status.url: cannot move")
	}
	out := obj.DeepCopy()
	from, into := "url", "link"
	if to == "v1" {
		from, into = into, from
	}
	if st, ok := out.Object["status"].(map[string]any); ok {
		if v, ok := st[from]; ok {
			delete(st, from)
			st[into] = v
		}
	}
	out.SetAPIVersion("example.loom.dev/" + to)
	return out, nil
}

// applyRecorder is a fake client that records the status applies it is
// sent, and answers each with the object sent at resourceVersion "2".
func applyRecorder(t *testing.T) (*dynamicfake.FakeDynamicClient, *[]*unstructured.Unstructured) {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	var applied []*unstructured.Unstructured
	client.PrependReactor("patch", "myresources", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(a.(k8stesting.PatchAction).GetPatch()); err != nil {
			t.Fatal(err)
		}
		applied = append(applied, obj)
		resp := obj.DeepCopy()
		resp.SetResourceVersion("2")
		return true, resp, nil
	})
	return client, &applied
}

func TestWriteConvertsTheStatusToTheStoredVersion(t *testing.T) {
	set, err := render.LoadFS(fstest.MapFS{
		config.File: {Data: []byte("parent: {apiVersion: example.loom.dev/v1, kind: MyResource}\n")},
		"cm.yaml":   {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")},
	}, "app")
	if err != nil {
		t.Fatal(err)
	}
	stored := u(t, parentYAML) // as the parent cache holds it: v1alpha1
	hub, _ := statusMove{}.Convert(stored, "v1")
	tests := []struct {
		name string
		conv statusMove
		// wantStatus are the fields of the status written, in v1alpha1;
		// wantAbsent must not be there.
		wantStatus map[string]any
		wantAbsent string
		wantIn     string
	}{
		{name: "converted", wantStatus: map[string]any{"link": "https://web"}, wantAbsent: "url"},
		{name: "the conversion fails", conv: statusMove{fail: true}, wantAbsent: "url",
			wantIn: "convert MyResource ns/web from v1 to v1alpha1: loom.yaml:14: status.url: cannot move"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, applied := applyRecorder(t)
			w := New(Config{Client: client, GVK: schema.GroupVersionKind{Group: "example.loom.dev", Version: "v1alpha1", Kind: "MyResource"},
				Resource: func() schema.GroupVersionResource {
					return schema.GroupVersionResource{Group: "example.loom.dev", Version: "v1alpha1", Resource: "myresources"}
				},
				FieldManager: "loom", Clock: testingclock.NewFakePassiveClock(time.Unix(1e9, 0)), Recorder: record.NewFakeRecorder(10),
				Writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "w"}, []string{"kind"}),
				Cached: func(cache.ObjectName) (types.UID, string, bool) { return "", "", false },
				Parent: func(cache.ObjectName) (*unstructured.Unstructured, bool) { return nil, false },
			})
			in := status.Input{Extra: map[string]any{"url": "https://web"}}
			if err := w.Write(t.Context(), set, stored, Hub{Parent: hub, Converter: tt.conv}, in); err != nil {
				t.Fatal(err)
			}
			if len(*applied) != 1 {
				t.Fatalf("%d status writes, want 1", len(*applied))
			}
			got := (*applied)[0]
			if got.GetAPIVersion() != "example.loom.dev/v1alpha1" {
				t.Errorf("written as %s, want the stored version", got.GetAPIVersion())
			}
			st, _ := got.Object["status"].(map[string]any)
			for k, v := range tt.wantStatus {
				if st[k] != v {
					t.Errorf("status.%s = %v, want %v", k, st[k], v)
				}
			}
			if _, ok := st[tt.wantAbsent]; ok {
				t.Errorf("status.%s written, but the stored version has no such field", tt.wantAbsent)
			}
			if deg := ConditionOf(st, status.TypeDegraded); tt.wantIn != "" && !strings.Contains(deg.Message, tt.wantIn) {
				t.Errorf("Degraded = %+v, want its message to hold %q", deg, tt.wantIn)
			}
			// The cache catches up with the write: the same status again
			// is no write.
			cur := stored.DeepCopy()
			cur.SetResourceVersion("2")
			cur.Object["status"] = st
			hub2, _ := statusMove{}.Convert(cur, "v1")
			if err := w.Write(t.Context(), set, cur, Hub{Parent: hub2, Converter: tt.conv}, in); err != nil {
				t.Fatal(err)
			}
			if len(*applied) != 1 {
				t.Errorf("an unchanged status was written again:\n%v", (*applied)[1].Object["status"])
			}
		})
	}
}
