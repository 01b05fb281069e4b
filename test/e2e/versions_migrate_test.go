//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/test/env"
)

// twoVersions is the tail of a loom.yaml whose hub v1 and v1alpha1 have
// the same schema and no conversion rules, so that the CRD converts with
// strategy None (no webhook); storage names the storage version, and
// allow sets schema.allowBreakingChanges.
func twoVersions(storage string, allow bool) string {
	tail := installSchema
	if allow {
		tail += "  allowBreakingChanges: true\n"
	}
	return tail + "storageVersion: " + storage + "\nversions:\n- name: v1alpha1\n  schema:\n" +
		indent(strings.TrimPrefix(installSchema, "\nschema:\n"), "  ")
}

// indent puts prefix before every line of s.
func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// storedVersions reads the CRD's status.storedVersions.
func storedVersions(ctx context.Context, t *testing.T, name string) ([]string, error) {
	t.Helper()
	crd, err := env.From(t).Get(ctx, crdGVR, "", name)
	if err != nil {
		return nil, err
	}
	v, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	return v, nil
}

// crdVersions names the versions of the live CRD.
func crdVersions(t *testing.T, name string) []string {
	t.Helper()
	crd, err := env.From(t).Get(context.Background(), crdGVR, "", name)
	if err != nil {
		t.Fatal(err)
	}
	vs, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var out []string
	for _, v := range vs {
		out = append(out, v.(map[string]any)["name"].(string))
	}
	return out
}

// A version is retired only when nothing uses it. Parents created in
// v1alpha1, the storage version of a set that serves v1 and v1alpha1:
// removing v1alpha1 from loom.yaml is refused, even with
// allowBreakingChanges, naming the parents. Switching storageVersion to v1
// (loom.yaml, --install-crds, as a user does) makes Loom rewrite every
// parent and shrink status.storedVersions to [v1]; once the parents were
// last written in v1, removing v1alpha1 is applied and the parents stay.
func TestStoredVersionMigratesAndRetires(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	s := newInstallSet(t, "Migrated", twoVersions("v1alpha1", false), "v0")
	l := startLoom(t, s.root, ns, loomOptions{installCRDs: true, quiet: true, bufferLogs: true})
	s.waitEstablished(t)
	alpha := schema.GroupVersionResource{Group: installGroup, Version: "v1alpha1", Resource: s.gvr.Resource}
	names := []string{"a", "b", "c"}
	for _, name := range names {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": installGroup + "/v1alpha1", "kind": s.kind,
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"image": "nginx"}}}
		if _, err := e.Dyn.Resource(alpha).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s in v1alpha1: %v", name, err)
		}
	}
	for _, name := range names {
		s.waitReady(t, ns, name, map[string]string{"marker": "v0", "image": "nginx"})
	}
	if got, err := storedVersions(context.Background(), t, s.crdName); err != nil || !slices.Equal(got, []string{"v1alpha1"}) {
		t.Fatalf("storedVersions = %v, %v; want [v1alpha1]", got, err)
	}

	// 1. Removing the stored version is refused, allowBreakingChanges or not.
	s.edit(t, installSchema+"  allowBreakingChanges: true\n", "v1")
	parents := []string{ns + "/a", ns + "/b", ns + "/c"}
	waitEvent(t, "default", s.crdName, "Warning", "BreakingChangeRefused",
		append([]string{"v1alpha1: version removed while still stored", "let Loom migrate"}, parents...)...)
	if got := crdVersions(t, s.crdName); !slices.Equal(got, []string{"v1", "v1alpha1"}) {
		t.Fatalf("CRD versions %v after the refusal, want [v1 v1alpha1]", got)
	}

	// 2. The storage version moves to v1: every parent is rewritten, then
	// storedVersions shrinks.
	for _, name := range names {
		if got := storedAs(t, s.gvr, ns, name); got != installGroup+"/v1alpha1" {
			t.Fatalf("etcd holds %s/%s as %q before the switch, want v1alpha1", ns, name, got)
		}
	}
	s.edit(t, twoVersions("v1", true), "v2")
	eventually(t, 60*time.Second, "storedVersions is [v1]", func(ctx context.Context) error {
		got, err := storedVersions(ctx, t, s.crdName)
		if err != nil {
			return err
		}
		if !slices.Equal(got, []string{"v1"}) {
			return fmt.Errorf("storedVersions %v", got)
		}
		return nil
	})
	if n := l.counter(t, "loom_storage_migration_parents_total", nil); n != float64(len(names)) {
		t.Errorf("loom_storage_migration_parents_total = %v, want %d", n, len(names))
	}
	if n := l.counter(t, "loom_storage_migrations_total", map[string]string{"result": "done"}); n != 1 {
		t.Errorf("loom_storage_migrations_total{result=done} = %v, want 1", n)
	}
	for _, name := range names {
		if got := storedAs(t, s.gvr, ns, name); got != installGroup+"/v1" {
			t.Errorf("etcd holds %s/%s as %q after the migration, want v1", ns, name, got)
		}
	}
	if logs := l.logs(); !strings.Contains(logs, "Stored parents migrated") {
		t.Errorf("the log does not report the migration:\n%s", logs)
	}

	// 3. Tenants write their parents in v1 (a later managedFields entry
	// than the one that created them in v1alpha1); then v1alpha1 retires.
	for _, name := range names {
		eventually(t, 30*time.Second, name+" was last written in v1", func(ctx context.Context) error {
			patchObject(t, s.gvr, ns, name, fmt.Sprintf(`{"metadata":{"labels":{"written":%q}}}`, time.Now().Format("150405.000")))
			p, err := e.Get(ctx, s.gvr, ns, name)
			if err != nil {
				return err
			}
			if got := newestEntry(p); got != installGroup+"/v1" {
				return fmt.Errorf("newest managedFields entry in %s", got)
			}
			return nil
		})
	}
	s.edit(t, installSchema+"  allowBreakingChanges: true\n", "v3") // v1alpha1's clients break
	eventually(t, 60*time.Second, "the CRD serves v1 only", func(context.Context) error {
		if got := crdVersions(t, s.crdName); !slices.Equal(got, []string{"v1"}) {
			return fmt.Errorf("versions %v", got)
		}
		return nil
	})
	patchObject(t, s.gvr, ns, "a", `{"spec":{"image":"httpd"}}`)
	s.waitData(t, ns, "a", map[string]string{"marker": "v3", "image": "httpd"})
	l.mustBeRunning(t)
}

// newestEntry is the apiVersion of obj's newest managedFields entry.
func newestEntry(obj *unstructured.Unstructured) string {
	var newest metav1.Time
	v := ""
	for _, f := range obj.GetManagedFields() {
		if f.Time != nil && (v == "" || f.Time.After(newest.Time)) {
			newest, v = *f.Time, f.APIVersion
		}
	}
	return v
}

// storedAs reads, from the local cluster's etcd (hack/cluster: its JSON
// gateway at 127.0.0.1:$CLUSTER_ETCD_PORT, 23790 by default), the
// apiVersion a custom resource is encoded in: what the API server stored,
// which no API request shows.
func storedAs(t *testing.T, gvr schema.GroupVersionResource, ns, name string) string {
	t.Helper()
	port := os.Getenv("CLUSTER_ETCD_PORT")
	if port == "" {
		port = "23790"
	}
	key := fmt.Sprintf("/registry/%s/%s/%s/%s", gvr.Group, gvr.Resource, ns, name)
	body, _ := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))})
	resp, err := http.Post("http://127.0.0.1:"+port+"/v3/kv/range", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("read %s from the local cluster's etcd: %v", key, err)
	}
	defer resp.Body.Close()
	var out struct {
		KVs []struct {
			Value []byte `json:"value"`
		} `json:"kvs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.KVs) != 1 {
		t.Fatalf("read %s from etcd: %v (%d values)", key, err, len(out.KVs))
	}
	var obj struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(out.KVs[0].Value, &obj); err != nil {
		t.Fatalf("%s in etcd is not JSON: %v", key, err)
	}
	return obj.APIVersion
}

// failAfterFirst is an http.RoundTripper that lets the first update of a
// parent of resource through and fails every later one, as if Loom died
// halfway through a migration.
type failAfterFirst struct {
	next     http.RoundTripper
	resource string
	passed   atomic.Bool
}

func (f *failAfterFirst) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/"+f.resource+"/") && !strings.HasSuffix(req.URL.Path, "/status") {
		if f.passed.Swap(true) {
			return nil, fmt.Errorf("test: update %s refused after the first", req.URL.Path)
		}
	}
	return f.next.RoundTrip(req)
}

// A migration cut short leaves status.storedVersions as it was, with some
// parents moved and some not; the next Loom to start finishes it.
func TestStoredVersionMigrationResumes(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	s := newInstallSet(t, "Resumed", twoVersions("v1alpha1", false), "v0")
	faulty := startLoom(t, s.root, ns, loomOptions{installCRDs: true, quiet: true,
		transport: func(rt http.RoundTripper) http.RoundTripper {
			return &failAfterFirst{next: rt, resource: s.gvr.Resource}
		}})
	s.waitEstablished(t)
	alpha := schema.GroupVersionResource{Group: installGroup, Version: "v1alpha1", Resource: s.gvr.Resource}
	names := []string{"a", "b", "c"}
	for _, name := range names {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": installGroup + "/v1alpha1", "kind": s.kind,
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"image": "nginx"}}}
		if _, err := e.Dyn.Resource(alpha).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s in v1alpha1: %v", name, err)
		}
	}
	for _, name := range names {
		s.waitReady(t, ns, name, map[string]string{"marker": "v0"})
	}

	s.edit(t, twoVersions("v1", false), "v0")
	eventually(t, 60*time.Second, "the cut-short migration failed", func(context.Context) error {
		if n := faulty.counter(t, "loom_storage_migrations_total", map[string]string{"result": "error"}); n < 1 {
			return fmt.Errorf("loom_storage_migrations_total{result=error} = %v", n)
		}
		return nil
	})
	if got, err := storedVersions(context.Background(), t, s.crdName); err != nil || !slices.Equal(got, []string{"v1alpha1", "v1"}) {
		t.Fatalf("storedVersions = %v, %v after a migration cut short; want [v1alpha1 v1]", got, err)
	}
	byVersion := map[string]int{}
	for _, name := range names {
		byVersion[storedAs(t, s.gvr, ns, name)]++
	}
	if want := map[string]int{installGroup + "/v1": 1, installGroup + "/v1alpha1": 2}; !maps.Equal(byVersion, want) {
		t.Fatalf("parents in etcd by version %v after the first rewrite only, want %v", byVersion, want)
	}
	faulty.cancel()
	if err := <-faulty.done; err != nil {
		t.Fatalf("the first Loom: %v", err)
	}
	faulty.done <- nil // for its cleanup

	startLoom(t, s.root, ns, loomOptions{installCRDs: true, quiet: true})
	eventually(t, 60*time.Second, "storedVersions is [v1]", func(ctx context.Context) error {
		got, err := storedVersions(ctx, t, s.crdName)
		if err != nil {
			return err
		}
		if !slices.Equal(got, []string{"v1"}) {
			return fmt.Errorf("storedVersions %v", got)
		}
		return nil
	})
	for _, name := range names {
		if got := storedAs(t, s.gvr, ns, name); got != installGroup+"/v1" {
			t.Errorf("etcd holds %s/%s as %q after the resumed migration, want v1", ns, name, got)
		}
	}
}
