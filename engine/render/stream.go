package render

import (
	"bytes"
	"fmt"
	"io"

	yamlv2 "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/render/yamldoc"
)

// MarshalStream writes objects as one YAML stream, each document after a
// "---" line, with map keys sorted. The same objects always give the same
// bytes, which is what golden files need.
func MarshalStream(objs []*unstructured.Unstructured) ([]byte, error) {
	var b bytes.Buffer
	for _, o := range objs {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("marshal %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes(), nil
}

// ReadParents reads every object in a YAML stream, such as a file given to
// `loom render -f`. Empty documents are skipped.
func ReadParents(r io.Reader) ([]*unstructured.Unstructured, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for i, d := range yamldoc.Split(data) {
		if yamldoc.IsBlank(d.Text) {
			continue
		}
		obj, err := yamldoc.Decode(d.Text)
		if err != nil {
			var raw any
			if yamlv2.Unmarshal(d.Text, &raw) == nil {
				if _, ok := raw.([]any); ok {
					return nil, fmt.Errorf("document %d is a YAML list, not an object: give each object as its own document (separated by ---), or as the items of a v1 List", i+1)
				}
			}
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if obj == nil {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
	return out, nil
}
