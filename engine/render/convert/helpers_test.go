package convert

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/config"
)

// testSet is a set whose hub v1 is reached from v1alpha1 by every kind
// of move, from v2 by a split at the first separator, and from v3 by
// templates.
const testSet = `
parent: {apiVersion: example.loom.dev/v1, kind: App}
schema:
  spec:
    replicas: integer
    image: string
    resources: {memory: string}
    tier: string
    endpoint: {host: string, port: string}
    labels: map[string]string
    ports: '[]integer'
  status:
    url: string
versions:
- name: v1alpha1
  schema:
    spec:
      size: integer
      image: {repository: string, tag: string}
      memory: string
      address: string
      labels: map[string]string
      legacy: string
      ports: '[]integer'
    status:
      address: string
  conversion:
    moves:
    - rename: {from: spec.size, to: spec.replicas}
    - join: {from: [spec.image.repository, spec.image.tag], separator: ":", to: spec.image, last: true, keep: /}
    - rename: {from: spec.memory, to: spec.resources.memory}
    - split: {from: spec.address, separator: ":", into: [spec.endpoint.host, spec.endpoint.port], last: true}
    - default: {path: spec.tier, value: standard}
    - rename: {from: status.address, to: status.url}
- name: v2
  schema:
    spec:
      replicas: integer
      address: string
  conversion:
    moves:
    - split: {from: spec.address, separator: ":", into: [spec.endpoint.host, spec.endpoint.port]}
- name: v3
  schema:
    spec:
      count: integer
    status:
      url: string
  conversion: {toHub: up.yaml, fromHub: down.yaml}
`

// fakeTemplates runs Go functions in place of templates.
type fakeTemplates map[string]func(parent map[string]any) (map[string]any, error)

func (f fakeTemplates) Spec(_ context.Context, file string, parent map[string]any) (map[string]any, error) {
	fn, ok := f[file]
	if !ok {
		return nil, fmt.Errorf("%s: no such template", file)
	}
	return fn(parent)
}

// countTemplates convert v3's spec.count to the hub's spec.replicas.
var countTemplates = fakeTemplates{
	"up.yaml": func(p map[string]any) (map[string]any, error) {
		spec, _ := p["spec"].(map[string]any)
		if n, ok := spec["count"]; ok {
			return map[string]any{"replicas": n}, nil
		}
		return map[string]any{}, nil
	},
	"down.yaml": func(p map[string]any) (map[string]any, error) {
		spec, _ := p["spec"].(map[string]any)
		if n, ok := spec["replicas"]; ok {
			return map[string]any{"count": n}, nil
		}
		return map[string]any{}, nil
	},
}

// newTestConverter builds the converter of testSet (or src).
func newTestConverter(t testing.TB, src string, tmpl Templates) *Converter {
	t.Helper()
	cfg, err := config.Parse([]byte(src))
	if err != nil {
		t.Fatalf("config.Parse: %v", err)
	}
	c, err := New(cfg, tmpl)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// obj decodes an inline YAML object as the API server's JSON decoder
// would (whole numbers int64).
func obj(t testing.TB, src string) *unstructured.Unstructured {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}
