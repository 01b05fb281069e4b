package yamldoc

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	kjson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// decodeSeeds are YAML documents that exercise the corners where YAML and
// JSON disagree.
var decodeSeeds = []string{
	"",
	"# only a comment\n",
	"a: 1\nb: two\nc: 3.5\nd: null\ne: true\n",
	"quoted: \"1\"\nsingle: '2.0'\nplain: 3\n",
	"y: yes\nn: no\non: on\noff: off\nY: Y\nN: n\n",
	"f1: 1.0\nf2: 1e3\nf3: 0.5\nf4: -0.0\nf5: 1e-7\nf6: 6.02e23\nf7: .5\n",
	"big: 9007199254740993\nbigger: 9223372036854775807\nover: 9223372036854775808\nhuge: 18446744073709551616\nneg: -9223372036854775808\n",
	"float17: 1.0e17\nfloat19: 1.0e19\nfloat21: 1.0e21\n",
	"hex: 0x1F\noct: 0o17\nold: 017\nbin: 0b101\nunder: 1_000\n",
	"inf: .inf\n",
	"nan: .nan\n",
	"list: [1, [2, [3, {a: b}]], {}, []]\nempty: {}\n",
	"base: &b {x: 1, y: [1, 2]}\nother: *b\nmerged:\n  <<: *b\n  z: 3\n",
	"date: 2001-12-14\nts: 2001-12-14t21:59:43.10-05:00\ntagged: !!timestamp 2001-12-14\n",
	"1: one\n2.5: two\ntrue: three\n0.1: four\n3.14159265358979: pi\n",
	"null: x\n",
	"~: x\n",
	"18446744073709551615: x\n",
	"1: a\n\"1\": b\n",
	"bin: !!binary aGVsbG8=\ninvalid: !!binary /w==\n",
	"str: !!str 123\nint: !!int \"7\"\nfloat: !!float 3\n",
	"multi: |\n  line one\n  line two\nfolded: >\n  a\n  b\n",
	"unicode: \"h\\u00e9llo \\U0001F600\"\nkey é: ü\n",
	"- a\n- b\n",
	"just a string\n",
	"42\n",
	"a: b\n---\nc: d\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  k: v\n",
}

// FuzzDecodeMatchesSigsYAML checks that Decode gives what kubectl's
// path gives: sigs.k8s.io/yaml's YAML → JSON conversion, then Kubernetes'
// JSON decoding (integral numbers become int64, others float64).
func FuzzDecodeMatchesSigsYAML(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, gotErr := Decode(doc)
		want, wantErr := viaSigsYAML(doc)
		switch {
		case gotErr != nil && wantErr != nil:
			return
		case errors.Is(gotErr, errKeyCollision):
			// Documented difference: sigs.k8s.io/yaml keeps one of the
			// colliding keys in an undefined order; Decode refuses.
			return
		case gotErr != nil:
			t.Fatalf("Decode failed but sigs.k8s.io/yaml did not\ndoc: %q\nerr: %v\nsigs: %#v", doc, gotErr, want)
		case wantErr != nil:
			t.Fatalf("sigs.k8s.io/yaml failed but Decode did not\ndoc: %q\nerr: %v\ngot: %#v", doc, wantErr, got)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Decode(%q) mismatch (-sigs.k8s.io/yaml +Decode):\n%s", doc, diff)
		}
	})
}

// viaSigsYAML decodes doc the way kubectl does. A document that is empty
// or only comments gives nil, as Decode's does.
func viaSigsYAML(doc []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := kjson.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	return m, nil
}
