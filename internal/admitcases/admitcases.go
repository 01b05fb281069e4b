// Package admitcases is the table of parents that both the offline
// admission test (engine/crd) and the e2e test against the real API server
// (test/e2e) run, so that the two cannot drift: for each parent, whether
// the API server accepts it, what it stores, or the message it refuses it
// with. The CRDs the table is written against are in crds.yaml.
package admitcases

import (
	"bytes"
	_ "embed"
	"fmt"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// Group is the API group of the table's CRDs.
const Group = "admit.test.loom.dev"

//go:embed crds.yaml
var crdsYAML []byte

// Case is one parent and what the API server does with it on create.
type Case struct {
	// Name names the case (and is the parent's name unless Object gives
	// another).
	Name string
	// Object is the parent as its author writes it, in YAML.
	Object string
	// Stored is, when the API server accepts Object, the object it
	// stores, without metadata (see Stored), in YAML.
	Stored string
	// Error is, when the API server refuses Object, its message.
	Error string
	// Warnings are the warnings the API server sends back, in order: one
	// for each field it pruned.
	Warnings []string
}

// CRDYAML returns the table's CRDs, each as its own YAML document.
func CRDYAML() [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(crdsYAML, []byte("\n---\n")) {
		docs = append(docs, d)
	}
	return docs
}

// CRDs returns the table's CRDs, keyed by kind.
func CRDs() (map[string]*apiextv1.CustomResourceDefinition, error) {
	out := map[string]*apiextv1.CustomResourceDefinition{}
	for i, d := range CRDYAML() {
		crd := &apiextv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(d, crd); err != nil {
			return nil, fmt.Errorf("crds.yaml document %d: %w", i+1, err)
		}
		out[crd.Spec.Names.Kind] = crd
	}
	return out, nil
}

// Decode returns a case's object (Object) or expected stored object
// (Stored) as a map, decoded as the API server and client-go decode JSON
// (whole numbers are int64).
func Decode(y string) (map[string]any, error) {
	raw, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// Stored is what of a stored object the table compares: all but metadata,
// where the API server adds what offline admission does not invent (uid,
// creationTimestamp, generation, managedFields).
func Stored(obj map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range obj {
		if k != "metadata" {
			out[k] = v
		}
	}
	return out
}
