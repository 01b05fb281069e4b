//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/api/v1alpha1"
	"github.com/loom-operator/loom/test/env"
)

// installGroup is the API group of the kinds these tests let Loom install.
const installGroup = "install.test.loom.dev"

// installConfigMap renders one ConfigMap per parent; marker says which
// version of the set rendered it. Loom checks the fields a template reads
// against the schema: a marker that ends with "-notier" leaves out
// .Spec.tier, for a schema without it.
const installConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}
data:
  marker: %s
  image: {{ .Spec.image | default "none" | quote }}
%s`

// configMapTemplate is installConfigMap with marker.
func configMapTemplate(marker string) string {
	if m, ok := strings.CutSuffix(marker, "-notier"); ok {
		return fmt.Sprintf(installConfigMap, m, "")
	}
	return fmt.Sprintf(installConfigMap, marker, "  tier: {{ .Spec.tier | default \"none\" | quote }}\n")
}

// installSet is a template set for kind (group installGroup, version v1)
// in a folder of its own, whose CRD Loom installs.
type installSet struct {
	root, dir string
	kind      string
	gvr       schema.GroupVersionResource
	crdName   string
}

// newInstallSet writes a set for kind whose loom.yaml ends with tail
// (its scope and schema), rendering installConfigMap with marker.
func newInstallSet(t *testing.T, kind, tail, marker string) *installSet {
	t.Helper()
	e := env.From(t)
	plural := strings.ToLower(kind) + "s"
	s := &installSet{root: t.TempDir(), kind: kind, crdName: plural + "." + installGroup,
		gvr: schema.GroupVersionResource{Group: installGroup, Version: "v1", Resource: plural}}
	s.dir = filepath.Join(s.root, strings.ToLower(kind))
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := e.Dyn.Resource(crdGVR).Delete(context.Background(), s.crdName, metav1.DeleteOptions{})
		if err != nil && !isNotFound(err) {
			t.Errorf("delete CRD %s: %v", s.crdName, err)
		}
	})
	s.write(t, "configmap.yaml", configMapTemplate(marker))
	s.write(t, "loom.yaml", s.loomYAML(tail))
	return s
}

func (s *installSet) loomYAML(tail string) string {
	return fmt.Sprintf("parent:\n  apiVersion: %s/v1\n  kind: %s\n", installGroup, s.kind) + strings.TrimLeft(tail, "\n")
}

// write replaces a file of the set in one rename, so that the watcher
// sees one edit.
func (s *installSet) write(t *testing.T, name, text string) {
	t.Helper()
	tmp := filepath.Join(s.dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(strings.TrimLeft(text, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, name)); err != nil {
		t.Fatal(err)
	}
}

// edit rewrites loom.yaml's tail, then the ConfigMap's marker. A reload
// that reads between the two sees the new schema with the old marker,
// never the other way round, which would look like a swapped set.
func (s *installSet) edit(t *testing.T, tail, marker string) {
	t.Helper()
	s.write(t, "loom.yaml", s.loomYAML(tail))
	s.write(t, "configmap.yaml", configMapTemplate(marker))
}

// create creates a parent named name in ns with the spec in YAML.
func (s *installSet) create(t *testing.T, ns, name, spec string) {
	t.Helper()
	e := env.From(t)
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	if err := yaml.Unmarshal([]byte(spec), &obj.Object); err != nil {
		t.Fatal(err)
	}
	obj.Object = map[string]any{"apiVersion": installGroup + "/v1", "kind": s.kind, "spec": obj.Object}
	obj.SetName(name)
	if _, err := e.Dyn.Resource(s.gvr).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s %s/%s: %v", s.kind, ns, name, err)
	}
}

// waitEstablished waits until Loom has installed the set's CRD.
func (s *installSet) waitEstablished(t *testing.T) {
	t.Helper()
	e := env.From(t)
	eventually(t, 60*time.Second, "CRD "+s.crdName+" is established", func(ctx context.Context) error {
		crd, err := e.Get(ctx, crdGVR, "", s.crdName)
		if err != nil {
			return err
		}
		if st, _, _ := condition(crd, "Established"); st != "True" {
			return fmt.Errorf("Established=%q", st)
		}
		return nil
	})
}

// specFields returns the names of the fields the live CRD's v1 schema
// gives the spec.
func (s *installSet) specFields(t *testing.T) []string {
	t.Helper()
	e := env.From(t)
	crd, err := e.Get(context.Background(), crdGVR, "", s.crdName)
	if err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		if vm["name"] != "v1" {
			continue
		}
		props, _, _ := unstructured.NestedMap(vm, "schema", "openAPIV3Schema", "properties", "spec", "properties")
		var names []string
		for name := range props {
			names = append(names, name)
		}
		return names
	}
	t.Fatalf("CRD %s has no version v1", s.crdName)
	return nil
}

// waitReady waits until the parent is Ready and its ConfigMap holds want.
func (s *installSet) waitReady(t *testing.T, ns, name string, want map[string]string) {
	t.Helper()
	waitConditionGVR(t, s.gvr, ns, name, "Ready", "True")
	s.waitData(t, ns, name, want)
}

// waitData waits until the parent's ConfigMap holds want, and the parent
// has been reconciled at its current generation.
func (s *installSet) waitData(t *testing.T, ns, name string, want map[string]string) {
	t.Helper()
	e := env.From(t)
	eventually(t, 30*time.Second, "ConfigMap "+name+" holds "+fmt.Sprint(want), func(ctx context.Context) error {
		p, err := e.Get(ctx, s.gvr, ns, name)
		if err != nil {
			return err
		}
		if og, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration"); og != p.GetGeneration() {
			return fmt.Errorf("observedGeneration %d, generation %d", og, p.GetGeneration())
		}
		cm, err := e.Get(ctx, configMapGVR, ns, name)
		if err != nil {
			return err
		}
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		for k, v := range want {
			if data[k] != v {
				return fmt.Errorf("data %v", data)
			}
		}
		return nil
	})
}

const installSchema = `
schema:
  spec:
    image: string
    replicas: number | default=1
    size: string
    tier: string
`

// Loom installs a set's CRD on an empty cluster, and its parents become
// Ready.
func TestInstallCRDsFromScratch(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	s := newInstallSet(t, "Blank", installSchema, "v0")
	if _, err := e.Get(context.Background(), crdGVR, "", s.crdName); !isNotFound(err) {
		t.Fatalf("CRD %s exists before the test: %v", s.crdName, err)
	}
	startLoom(t, s.root, ns, loomOptions{installCRDs: true})
	s.waitEstablished(t)
	s.create(t, ns, "web", `{image: nginx, replicas: 2}`)
	s.waitReady(t, ns, "web", map[string]string{"marker": "v0", "image": "nginx"})
	// The CRD is Loom's: server-side applied with its field manager.
	crd, err := e.Get(context.Background(), crdGVR, "", s.crdName)
	if err != nil {
		t.Fatal(err)
	}
	managers := map[string]string{}
	for _, f := range crd.GetManagedFields() {
		managers[f.Manager] = string(f.Operation)
	}
	if managers["loom"] != string(metav1.ManagedFieldsOperationApply) {
		t.Errorf("CRD managers %v, want loom to have applied it", managers)
	}
}

// Each breaking change is refused while a parent would break: the old CRD
// and the running set stay, and a Warning Event on the CRD names the
// parent. The same change with schema.allowBreakingChanges goes through.
func TestInstallCRDsRefusesBreakingChanges(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	tests := []struct {
		name, kind string
		// tail is loom.yaml's new scope and schema; field is a spec field
		// that the old CRD has, which the test reads to tell old from new.
		tail  string
		field string
		want  []string // in the Event
		allow bool
		// rollout, a rollout policy, gives the set a TemplateSet, whose
		// status says SchemaAccepted=False.
		rollout string
	}{{
		name: "removed field a parent sets", kind: "RemovedField",
		tail:  strings.Replace(installSchema, "    size: string\n", "", 1),
		field: "size", want: []string{".spec.size", "field removed"},
		rollout: "rollout:\n  steps: [1, 100%]\n",
	}, {
		name: "narrowed type", kind: "Narrowed",
		tail:  strings.Replace(installSchema, "replicas: number", "replicas: integer", 1),
		field: "replicas", want: []string{".spec.replicas", "number became integer"},
	}, {
		name: "tightened constraint a parent violates", kind: "Tightened",
		tail:  strings.Replace(installSchema, "replicas: number | default=1", "replicas: number | default=1 maximum=2", 1),
		field: "replicas", want: []string{"invalid under the new schema", "spec.replicas"},
	}, {
		name: "new required field without default", kind: "Required",
		tail:  strings.Replace(installSchema, "    tier: string\n", "    tier: string\n    owner: string | required=true\n", 1),
		field: "image", want: []string{".spec.owner", "newly required"},
	}, {
		name: "changed scope", kind: "Rescoped",
		tail:  "  scope: Cluster\n" + installSchema,
		field: "image", want: []string{"scope changed from Namespaced to Cluster"},
	}, {
		name: "allowed removal", kind: "Allowed",
		tail:  strings.Replace(installSchema, "    size: string\n", "", 1) + "  allowBreakingChanges: true\n",
		field: "size", want: []string{"applied with a breaking change", ".spec.size"}, allow: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := e.NewNamespace(t)
			s := newInstallSet(t, tc.kind, tc.rollout+installSchema, "v0")
			l := startLoom(t, s.root, ns, loomOptions{installCRDs: true, quiet: true, bufferLogs: true})
			s.waitEstablished(t)
			s.create(t, ns, "web", `{image: nginx, replicas: 3, size: 1Gi}`)
			s.waitReady(t, ns, "web", map[string]string{"marker": "v0"})

			s.edit(t, tc.rollout+tc.tail, "v1")
			parent := ns + "/web"
			if tc.allow {
				waitEvent(t, "default", s.crdName, "Normal", "BreakingChangeAllowed", append(tc.want, parent)...)
				eventually(t, 30*time.Second, "the field is gone from the CRD", func(context.Context) error {
					if fields := strings.Join(s.specFields(t), ","); strings.Contains(fields, tc.field) {
						return fmt.Errorf("spec fields %s", fields)
					}
					return nil
				})
				patchObject(t, s.gvr, ns, "web", `{"spec":{"image":"httpd"}}`)
				s.waitData(t, ns, "web", map[string]string{"marker": "v1", "image": "httpd"})
				return
			}
			waitEvent(t, "default", s.crdName, "Warning", "BreakingChangeRefused", append(tc.want, parent)...)
			if fields := strings.Join(s.specFields(t), ","); !strings.Contains(fields, tc.field) {
				t.Errorf("the live CRD lost .spec.%s (spec fields %s): the refused CRD was applied", tc.field, fields)
			}
			// The running set stays: a new generation is rendered by v0.
			patchObject(t, s.gvr, ns, "web", `{"spec":{"image":"httpd"}}`)
			s.waitData(t, ns, "web", map[string]string{"marker": "v0", "image": "httpd"})
			if logs := l.logs(); !strings.Contains(logs, "CRD not installed") || !strings.Contains(logs, parent) {
				t.Errorf("the log does not report the refusal naming %s:\n%s", parent, logs)
			}
			if tc.rollout == "" {
				return
			}
			// The set's TemplateSet says so too.
			ts := strings.ToLower(tc.kind) + "." + ns
			eventually(t, 30*time.Second, "TemplateSet "+ts+" is SchemaAccepted=False", func(ctx context.Context) error {
				obj, err := e.Get(ctx, v1alpha1.TemplateSetGVR, "", ts)
				if err != nil {
					return err
				}
				if st, reason, msg := condition(obj, "SchemaAccepted"); st != "False" || reason != "BreakingChange" || !containsAll(msg, append(tc.want, parent)) {
					return fmt.Errorf("SchemaAccepted=%q %s: %s", st, reason, msg)
				}
				return nil
			})
		})
	}
}

// A non-breaking change (a new optional field) is applied on a hot
// reload, and parents that set the field reconcile with it.
func TestInstallCRDsAppliesCompatibleChange(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	old := strings.Replace(installSchema, "    tier: string\n", "", 1)
	s := newInstallSet(t, "Compatible", old, "v0-notier")
	startLoom(t, s.root, ns, loomOptions{installCRDs: true})
	s.waitEstablished(t)
	s.create(t, ns, "web", `{image: nginx}`)
	s.waitReady(t, ns, "web", map[string]string{"marker": "v0"})

	s.edit(t, installSchema, "v1")
	eventually(t, 30*time.Second, "the CRD gains .spec.tier", func(context.Context) error {
		if fields := strings.Join(s.specFields(t), ","); !strings.Contains(fields, "tier") {
			return fmt.Errorf("spec fields %s", fields)
		}
		return nil
	})
	// The API server serves the new schema shortly after the CRD changes:
	// until it does, it prunes tier, so the patch is sent again until the
	// field is stored.
	eventually(t, 30*time.Second, "the parent stores .spec.tier", func(ctx context.Context) error {
		patchObject(t, s.gvr, ns, "web", `{"spec":{"tier":"gold"}}`)
		p, err := e.Get(ctx, s.gvr, ns, "web")
		if err != nil {
			return err
		}
		if tier, _, _ := unstructured.NestedString(p.Object, "spec", "tier"); tier != "gold" {
			return errNotYet
		}
		return nil
	})
	s.waitData(t, ns, "web", map[string]string{"marker": "v1", "tier": "gold"})
}
