package convert

import (
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzDeclarativeRoundTrip holds the declarative conversions of testSet
// to exact round trips: a random parent valid against the schema of v1,
// v1alpha1 or v2 comes back the same from every trip through another of
// them (A→hub→A, hub→A→hub, and A→B→A between two spokes), and RoundTrip
// finds no conversion that drops a field the other version holds.
func FuzzDeclarativeRoundTrip(f *testing.F) {
	for _, seed := range [][]byte{
		{0},
		{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
		[]byte("host:5000/app:1.2 and some more bytes to spend"),
		{2, 0xff, 3, 'a', ':', '/', 7, 1, 1, 1, 0, 1, 5, ':', ':', 1, 3},
		{1, 3, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
		[]byte{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1},
	} {
		f.Add(seed)
	}
	c := newTestConverter(f, testSet, countTemplates)
	declarative := []string{"v1", "v1alpha1", "v2"}
	f.Fuzz(func(t *testing.T, b []byte) {
		g := &gen{b: b}
		from := declarative[int(g.next())%len(declarative)]
		o := &unstructured.Unstructured{Object: g.object(c.versions[from].schema)}
		o.SetAPIVersion("example.loom.dev/" + from)
		o.SetKind("App")
		o.SetName("web")
		if g.next()%2 == 1 {
			o.SetAnnotations(map[string]string{"team": "a"})
		}
		if err := c.RoundTrip(o); err != nil {
			t.Fatalf("RoundTrip(%v) = %v", o.Object, err)
		}
		for _, via := range declarative {
			if via == from {
				continue
			}
			out, err := c.Convert(o, via)
			if err != nil {
				t.Fatalf("Convert(%v, %s) = %v", o.Object, via, err)
			}
			back, err := c.Convert(out, from)
			if err != nil {
				t.Fatalf("Convert(%v, %s) = %v", out.Object, from, err)
			}
			if diff := cmp.Diff(o.Object, back.Object); diff != "" {
				t.Fatalf("%s → %s → %s (-want +got):\n%s\nthrough %v", from, via, from, diff, out.Object)
			}
		}
	})
}

// gen makes a value valid against a structural schema from bytes.
type gen struct {
	b []byte
	i int
}

func (g *gen) next() byte {
	if g.i >= len(g.b) {
		return 0
	}
	g.i++
	return g.b[g.i-1]
}

// object makes an object with spec and status from a version's schema.
func (g *gen) object(s *structuralschema.Structural) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"spec", "status"} {
		if p, ok := s.Properties[k]; ok && g.next()%4 != 0 {
			out[k] = g.value(&p, 0)
		}
	}
	return out
}

// value makes a value of s's type.
func (g *gen) value(s *structuralschema.Structural, depth int) any {
	switch s.Type {
	case "object":
		m := map[string]any{}
		keys := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if g.next()%2 == 1 && depth < 4 {
				p := s.Properties[k]
				m[k] = g.value(&p, depth+1)
			}
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
			for n := int(g.next() % 3); n > 0; n-- {
				m[g.str()] = g.value(s.AdditionalProperties.Structural, depth+1)
			}
		}
		return m
	case "array":
		var l []any
		for n := int(g.next() % 3); n > 0 && s.Items != nil; n-- {
			l = append(l, g.value(s.Items, depth+1))
		}
		if l == nil {
			l = []any{}
		}
		return l
	case "integer":
		return int64(int8(g.next()))
	case "number":
		return float64(int8(g.next())) / 4
	case "boolean":
		return g.next()%2 == 1
	default:
		return g.str()
	}
}

// str makes a short string of characters that separators and keep use.
func (g *gen) str() string {
	const alphabet = "ab:/.1"
	n := int(g.next() % 7)
	out := make([]byte, n)
	for i := range out {
		out[i] = alphabet[int(g.next())%len(alphabet)]
	}
	return fmt.Sprint(string(out))
}
