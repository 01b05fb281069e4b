package apply

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
	"github.com/loom-operator/loom/internal/fixture"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// check decides, without a request, whether a child needs a write. The
// decision reads Loom's managedFields entry, never the values.
func TestCheck(t *testing.T) {
	desired := fixture.Object(t, fixture.Deployment)
	hash, err := Hash(desired)
	if err != nil {
		t.Fatal(err)
	}
	applied := fixture.WithEntry(t, withHash(desired, hash), "loom", fixture.LoomFields)
	applied.SetUID("u1")
	applied.SetResourceVersion("5")
	fp := pack.Fingerprint(applied, "loom")
	// Loom applied at resourceVersion 5 over 4 (rec), or created the
	// child at 5 (created); seen is rec once the watch delivered 5.
	rec := newRecord(hash, "u1", "5", "4", fp)
	created := newRecord(hash, "u1", "5", "", fp)
	seen := rec
	seen.behind = false
	old := newRecord("old", "u1", "5", "4", fp)
	live := func(rv string, edit func(u *unstructured.Unstructured)) *unstructured.Unstructured {
		u := applied.DeepCopy()
		u.SetResourceVersion(rv)
		if edit != nil {
			edit(u)
		}
		return u
	}
	loses := func(fields string) func(u *unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) { *u = *fixture.WithEntry(t, u, "loom", fields) }
	}
	tests := []struct {
		name          string
		rec           *record
		live          *unstructured.Unstructured
		wantUnchanged bool
		wantKnown     bool
		wantStale     bool
	}{
		{"not in the cache, never applied", nil, nil, false, false, false},
		{"not in the cache yet, just created", &created, nil, true, true, true},
		{"cache older than Loom's own write", &rec, live("4", nil), true, true, true},
		{"gone from the cache since Loom's write (deleted)", &rec, nil, false, true, false},
		{"gone from the cache after it delivered Loom's write", &seen, nil, false, true, false},
		{"the cache delivered Loom's write", &seen, live("5", nil), true, true, false},
		// After an etcd restore, resourceVersions go backwards: the cache
		// delivered Loom's write, so an object at another version is the
		// world as restored, never a cache catching up.
		{"restored to the version before Loom's write", &seen, live("4", func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{AnnotationApplied: "old"})
		}), false, true, false},
		{"restored to an older version where another writer took spec.replicas", &seen, live("3", loses(
			`{f:metadata: {f:annotations: {f:loom.dev/applied: {}}, f:labels: {f:app: {}}}, f:spec: {f:template: {}}}`)), false, true, false},
		{"live as applied", &rec, live("5", nil), true, true, false},
		{"another writer changed a field Loom does not set", &rec, live("6", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, true, "spec", "paused")
		}), true, true, false},
		{"another writer took spec.replicas (Loom's entry lost it)", &rec, live("6", loses(
			`{f:metadata: {f:annotations: {f:loom.dev/applied: {}}, f:labels: {f:app: {}}}, f:spec: {f:template: {}}}`)), false, true, false},
		{"Loom's entry is gone (managedFields reset)", &rec, live("6", loses("")), false, true, false},
		// A value differs but Loom still owns the field: only the server
		// can have written it (a normalisation of Loom's own value).
		{"a server normalisation is not a change", &rec, live("5", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "docker.io/library/nginx", "spec", "template", "spec", "image")
		}), true, true, false},
		{"recreated by someone else (new UID)", &rec, live("9", func(u *unstructured.Unstructured) { u.SetUID("u2") }), false, true, false},
		{"being deleted", &rec, live("6", func(u *unstructured.Unstructured) {
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
		}), false, true, false},
		{"the hash annotation was edited", &rec, live("6", func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{AnnotationApplied: "other"})
		}), false, true, false},
		{"no record (after a restart): apply once", nil, live("5", nil), false, false, false},
		{"applied from another desired object", &old, live("5", nil), false, true, false},
	}
	// The informer cache holds slimmed objects: the decision must be the
	// same on them as on the whole object.
	for _, form := range []string{"whole", "slim"} {
		for _, tt := range tests {
			t.Run(form+"/"+tt.name, func(t *testing.T) {
				a := New(nil, nil, "loom")
				ref := object.RefOf(desired)
				if tt.rec != nil {
					a.applied[keyOf(ref)] = *tt.rec
				}
				live := tt.live
				if live != nil && form == "slim" {
					live = pack.Slim(live.DeepCopy(), "loom")
				}
				unchanged, known := a.check(ref, hash, live)
				if unchanged != tt.wantUnchanged || known != tt.wantKnown {
					t.Errorf("check = unchanged %v, known %v; want %v, %v", unchanged, known, tt.wantUnchanged, tt.wantKnown)
				}
				if got := a.applied[keyOf(ref)].stale; got != tt.wantStale {
					t.Errorf("stale = %v, want %v", got, tt.wantStale)
				}
			})
		}
	}
}

// Observe recognises the echo of Loom's own write, and ends the time the
// cache is behind that write when it delivers any other version than the
// one it held before it.
func TestObserve(t *testing.T) {
	a := New(nil, nil, "")
	ref := object.Ref{Name: "web"}
	at := func(rv string) *unstructured.Unstructured {
		return fixture.Object(t, `{metadata: {name: web, uid: u1, resourceVersion: "`+rv+`", annotations: {loom.dev/applied: h}}}`)
	}
	if a.Observe(ref, "5") {
		t.Fatal("nothing applied yet, but Observe reports Loom's write")
	}
	if _, known := a.check(ref, "h", at("5")); known {
		t.Error("what the watch delivered is taken for a record of an apply")
	}
	// The watch delivered 5 before the write's response (which made 5)
	// reached Loom: the cache is not behind the write.
	a.remember(ref, newRecord("h", "u1", "5", "4", ""))
	if a.applied[keyOf(ref)].behind {
		t.Error("the cache is taken to be behind a write it delivered before its response")
	}
	a.Forget(ref)
	a.remember(ref, newRecord("h", "u1", "5", "4", ""))
	if !a.Observe(ref, "5") {
		t.Error("the echo of our own write is not recognised")
	}
	if a.Observe(ref, "6") {
		t.Error("a later write by someone else is taken for our own")
	}
	// A reconcile that went on with the older cached object has not seen
	// the object at rv 5: its echo must reach the controller.
	a.remember(ref, newRecord("h", "u1", "5", "4", ""))
	if unchanged, _ := a.check(ref, "h", at("4")); !unchanged {
		t.Fatal("a lagging cache should read as unchanged")
	}
	if a.Observe(ref, "4") {
		t.Error("the version before the write is taken for the write")
	}
	if unchanged, _ := a.check(ref, "h", at("4")); !unchanged {
		t.Error("a late delivery of the version before the write ended the wait for the write")
	}
	if a.Observe(ref, "5") {
		t.Error("the echo is dropped although the reconcile used a stale cache")
	}
	// The cache delivered the write: the version before it, should it
	// come back (an etcd restore), is the object as it is.
	before := at("4")
	before.SetAnnotations(map[string]string{AnnotationApplied: "old"})
	if unchanged, _ := a.check(ref, "h", before); unchanged {
		t.Error("after the write was delivered, the version before it still reads as a lagging cache")
	}
	a.Forget(ref)
	if a.Observe(ref, "5") {
		t.Error("Forget kept the record")
	}
}

func TestRegained(t *testing.T) {
	base := fixture.Object(t, fixture.Deployment)
	tests := []struct {
		name, before string
		want         []string
	}{
		{"nothing lost", fixture.LoomFields, nil},
		{"replicas taken by a scaler", `{f:metadata: {f:annotations: {f:loom.dev/applied: {}}, f:labels: {f:app: {}}},
  f:spec: {f:template: {f:spec: {f:containers: {'k:{"name":"app"}': {.: {}, f:image: {}, f:name: {}}}}}}}`, []string{"spec.replicas"}},
		{"label removed by an update", `{f:metadata: {f:annotations: {f:loom.dev/applied: {}}},
  f:spec: {f:replicas: {}, f:template: {f:spec: {f:containers: {'k:{"name":"app"}': {.: {}, f:image: {}, f:name: {}}}}}}}`, []string{"metadata.labels.app"}},
		{"image changed by hand", `{f:metadata: {f:annotations: {f:loom.dev/applied: {}}, f:labels: {f:app: {}}},
  f:spec: {f:replicas: {}, f:template: {f:spec: {f:containers: {'k:{"name":"app"}': {.: {}, f:name: {}}}}}}}`,
			[]string{`spec.template.spec.containers[name="app"].image`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := regained(fixture.WithEntry(t, base, "loom", tt.before), fixture.WithEntry(t, base, "loom", fixture.LoomFields), "loom")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("regained (-want +got):\n%s", diff)
			}
		})
	}
}

// adoption decides whether Loom may apply over an object it finds in the
// place of a child it has no record of.
func TestAdoption(t *testing.T) {
	want := metav1.OwnerReference{APIVersion: "example.loom.dev/v1alpha1", Kind: "MyResource", Name: "web", UID: "p1", Controller: fixture.Ptr(true)}
	desired := fixture.Object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns,
  labels: {applyset.kubernetes.io/part-of: applyset-abc-v1}}}`)
	desired.SetOwnerReferences([]metav1.OwnerReference{want})
	other := want
	other.Kind, other.Name, other.UID = "ReplicaSet", "rs", "r1"
	earlier := want
	earlier.UID = "p0"
	tests := []struct {
		name    string
		cur     string
		owner   *metav1.OwnerReference
		wantErr any
	}{
		{"hand-made, no marks: refused", `{metadata: {name: web, namespace: ns}}`, nil, &object.NotAdoptedError{}},
		{"annotated for this parent: adopted", `{metadata: {name: web, namespace: ns, annotations: {loom.dev/adopt: MyResource.example.loom.dev/web}}}`, nil, nil},
		{"annotated for another parent: refused", `{metadata: {name: web, namespace: ns, annotations: {loom.dev/adopt: MyResource.example.loom.dev/other}}}`, nil, &object.NotAdoptedError{}},
		{"this parent's ApplySet label (an orphaned child): adopted", `{metadata: {name: web, namespace: ns, labels: {applyset.kubernetes.io/part-of: applyset-abc-v1}}}`, nil, nil},
		{"another parent's ApplySet label: refused", `{metadata: {name: web, namespace: ns, labels: {applyset.kubernetes.io/part-of: applyset-xyz-v1}}}`, nil, &object.NotAdoptedError{}},
		{"controlled by this parent", `{metadata: {name: web, namespace: ns}}`, &want, nil},
		{"controlled by another controller: refused even when annotated", `{metadata: {name: web, namespace: ns, annotations: {loom.dev/adopt: MyResource.example.loom.dev/web}}}`, &other, &object.OwnedByAnotherError{}},
		// The parent was deleted and created again under its name; the
		// garbage collector has not yet removed the old one's children.
		{"controlled by an earlier parent of this name, with its ApplySet label: adopted",
			`{metadata: {name: web, namespace: ns, labels: {applyset.kubernetes.io/part-of: applyset-abc-v1}}}`, &earlier, nil},
		{"controlled by an earlier parent of this name, without its ApplySet label: refused",
			`{metadata: {name: web, namespace: ns}}`, &earlier, &object.OwnedByAnotherError{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := fixture.Object(t, tt.cur)
			if tt.owner != nil {
				cur.SetOwnerReferences([]metav1.OwnerReference{*tt.owner})
			}
			err := adoption(cur, desired)
			checkAdoption(t, err, tt.wantErr)
			var e *object.OwnedByAnotherError
			if errors.As(err, &e) && e.Owner.UID != tt.owner.UID {
				t.Errorf("adoption = %v, want an object.OwnedByAnotherError naming %s", err, tt.owner.Name)
			}
		})
	}
	msg := (&object.NotAdoptedError{Ref: object.RefOf(desired), Want: want}).Error()
	if want := "loom.dev/adopt=MyResource.example.loom.dev/web"; !strings.Contains(msg, want) {
		t.Errorf("message %q does not say how to hand the object over (%s)", msg, want)
	}
}

// An object in the cache (it carries Loom's labels) is not therefore this
// parent's: one with another parent's ApplySet label, or with its labels
// copied by hand, and no controller, is refused without a request, like an
// object the cache does not hold. The Applier here has no client: any
// request would panic.
func TestApplyRefusesACachedObjectThatIsNotThisParents(t *testing.T) {
	want := metav1.OwnerReference{APIVersion: "example.loom.dev/v1alpha1", Kind: "MyResource", Name: "web", UID: "p1", Controller: fixture.Ptr(true)}
	desired := fixture.Object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns,
  labels: {app.kubernetes.io/managed-by: loom, applyset.kubernetes.io/part-of: applyset-web-v1}}, data: {a: b}}`)
	desired.SetOwnerReferences([]metav1.OwnerReference{want})
	other := want
	other.Name, other.UID = "other", "p2"
	tests := []struct {
		name    string
		live    string
		owner   *metav1.OwnerReference
		wantErr any
	}{
		{"another parent's ApplySet label, no controller",
			`{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns, uid: c1, resourceVersion: "3",
  labels: {app.kubernetes.io/managed-by: loom, applyset.kubernetes.io/part-of: applyset-other-v1}}}`, nil, &object.NotAdoptedError{}},
		{"controlled by another parent",
			`{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns, uid: c1, resourceVersion: "3",
  labels: {app.kubernetes.io/managed-by: loom, applyset.kubernetes.io/part-of: applyset-other-v1}}}`, &other, &object.OwnedByAnotherError{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live := fixture.Object(t, tt.live)
			if tt.owner != nil {
				live.SetOwnerReferences([]metav1.OwnerReference{*tt.owner})
			}
			r := New(nil, nil, "loom").Apply(t.Context(), desired, live)
			if r.Action != object.Failed {
				t.Fatalf("Apply = %s, want failed", r.Action)
			}
			switch tt.wantErr.(type) {
			case *object.NotAdoptedError:
				var e *object.NotAdoptedError
				if !errors.As(r.Err, &e) {
					t.Errorf("err = %v, want an object.NotAdoptedError", r.Err)
				}
			case *object.OwnedByAnotherError:
				var e *object.OwnedByAnotherError
				if !errors.As(r.Err, &e) {
					t.Errorf("err = %v, want an object.OwnedByAnotherError", r.Err)
				}
			}
		})
	}
}

// TestAdoptionClusterScoped: a cluster-scoped child of a namespaced parent
// names its parent in loom.dev/owner, and adoption judges it as it judges
// an ownerReference: a parent of the same name in another namespace, or
// another parent's object, is refused, and the adopt annotation must name
// the parent's namespace.
func TestAdoptionClusterScoped(t *testing.T) {
	const owner = "example.loom.dev/v1alpha1/MyResource/team-a/web/p1"
	desired := fixture.Object(t, `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: reader,
  labels: {applyset.kubernetes.io/part-of: applyset-abc-v1}, annotations: {loom.dev/owner: `+owner+`}}}`)
	tests := []struct {
		name    string
		cur     string
		wantErr any
		msg     string
	}{
		{"this parent's: adopted", `{metadata: {name: reader, labels: {applyset.kubernetes.io/part-of: applyset-abc-v1}, annotations: {loom.dev/owner: ` + owner + `}}}`, nil, ""},
		{"an earlier parent of this name, with its ApplySet label: adopted",
			`{metadata: {name: reader, labels: {applyset.kubernetes.io/part-of: applyset-abc-v1}, annotations: {loom.dev/owner: example.loom.dev/v1alpha1/MyResource/team-a/web/p0}}}`, nil, ""},
		{"a parent of the same name in another namespace: refused",
			`{metadata: {name: reader, labels: {applyset.kubernetes.io/part-of: applyset-xyz-v1}, annotations: {loom.dev/owner: example.loom.dev/v1alpha1/MyResource/team-b/web/p2}}}`,
			&object.OwnedByAnotherError{}, "is controlled by MyResource team-b/web, not by MyResource team-a/web"},
		{"the owner annotation copied without the ApplySet label: refused",
			`{metadata: {name: reader, annotations: {loom.dev/owner: example.loom.dev/v1alpha1/MyResource/team-a/web/p0}}}`, &object.OwnedByAnotherError{}, ""},
		{"hand-made: refused, naming the namespace to adopt", `{metadata: {name: reader}}`, &object.NotAdoptedError{},
			"loom.dev/adopt=MyResource.example.loom.dev/team-a/web"},
		{"annotated for this parent, with its namespace: adopted", `{metadata: {name: reader, annotations: {loom.dev/adopt: MyResource.example.loom.dev/team-a/web}}}`, nil, ""},
		{"annotated without a namespace: refused", `{metadata: {name: reader, annotations: {loom.dev/adopt: MyResource.example.loom.dev/web}}}`, &object.NotAdoptedError{}, ""},
		{"annotated for the parent of this name in another namespace: refused", `{metadata: {name: reader, annotations: {loom.dev/adopt: MyResource.example.loom.dev/team-b/web}}}`, &object.NotAdoptedError{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := adoption(fixture.Object(t, tt.cur), desired)
			checkAdoption(t, err, tt.wantErr)
			if tt.msg != "" && (err == nil || !strings.Contains(err.Error(), tt.msg)) {
				t.Errorf("adoption = %v, want a message containing %q", err, tt.msg)
			}
		})
	}
}

// checkAdoption fails the test unless err is nil when want is, or of
// want's type.
func checkAdoption(t *testing.T, err error, want any) {
	t.Helper()
	switch want.(type) {
	case nil:
		if err != nil {
			t.Errorf("adoption = %v, want nil", err)
		}
	case *object.NotAdoptedError:
		var e *object.NotAdoptedError
		if !errors.As(err, &e) {
			t.Errorf("adoption = %v, want an object.NotAdoptedError", err)
		}
	case *object.OwnedByAnotherError:
		var e *object.OwnedByAnotherError
		if !errors.As(err, &e) {
			t.Errorf("adoption = %v, want an object.OwnedByAnotherError", err)
		}
	}
}

// TestAdoptionRemote: a child placed in a workload cluster names its
// parent in loom.dev/owner, and adoption there takes the same consent as
// in the local cluster: an object of another owner (its own
// ownerReference there, or another parent's annotation) is refused, and
// a hand-made one needs the adopt annotation naming the parent.
func TestAdoptionRemote(t *testing.T) {
	const owner = "example.loom.dev/v1alpha1/MyResource/team-a/web/p1"
	desired := fixture.Object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: team-a,
  labels: {applyset.kubernetes.io/part-of: applyset-abc-v1}, annotations: {loom.dev/cluster: eu-1, loom.dev/owner: `+owner+`}}}`)
	tests := []struct {
		name    string
		cur     string
		wantErr any
	}{
		{"this parent's: adopted", `{metadata: {name: web, namespace: team-a, labels: {applyset.kubernetes.io/part-of: applyset-abc-v1},
  annotations: {loom.dev/cluster: eu-1, loom.dev/owner: ` + owner + `}}}`, nil},
		{"another parent's: refused", `{metadata: {name: web, namespace: team-a, labels: {applyset.kubernetes.io/part-of: applyset-xyz-v1},
  annotations: {loom.dev/cluster: eu-1, loom.dev/owner: example.loom.dev/v1alpha1/MyResource/team-a/other/p2}}}`, &object.OwnedByAnotherError{}},
		{"owned there by a controller of its own: refused", `{metadata: {name: web, namespace: team-a,
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: d, uid: d1, controller: true}]}}`, &object.OwnedByAnotherError{}},
		{"hand-made: refused", `{metadata: {name: web, namespace: team-a}}`, &object.NotAdoptedError{}},
		{"annotated for this parent: adopted", `{metadata: {name: web, namespace: team-a, annotations: {loom.dev/adopt: MyResource.example.loom.dev/web}}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkAdoption(t, adoption(fixture.Object(t, tt.cur), desired), tt.wantErr)
		})
	}
}
