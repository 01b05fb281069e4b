package crd

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// fields decodes an inline compact form as loom.yaml's decoder would.
func fields(t *testing.T, src string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(src), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// props decodes an inline OpenAPI schema.
func props(t *testing.T, src string) apiextv1.JSONSchemaProps {
	t.Helper()
	var p apiextv1.JSONSchemaProps
	if err := yaml.UnmarshalStrict([]byte(src), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCompileObject(t *testing.T) {
	tests := []struct {
		name, src, want string
		required        bool
	}{{
		name: "scalars",
		src: `
s: string
i: integer
n: number
b: boolean
o: object
`,
		want: `
type: object
properties:
  s: {type: string}
  i: {type: integer}
  n: {type: number}
  b: {type: boolean}
  o: {type: object, x-kubernetes-preserve-unknown-fields: true}
`,
	}, {
		name: "lists and maps, nested",
		src: `
ports: "[]integer"
env: "map[string]string"
matrix: "[][]number"
labelsets: "[]map[string]string"
byName: "map[string][]boolean"
free: "[]object"
`,
		want: `
type: object
properties:
  ports: {type: array, items: {type: integer}}
  env: {type: object, additionalProperties: {type: string}}
  matrix: {type: array, items: {type: array, items: {type: number}}}
  labelsets: {type: array, items: {type: object, additionalProperties: {type: string}}}
  byName: {type: object, additionalProperties: {type: array, items: {type: boolean}}}
  free: {type: array, items: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`,
	}, {
		name: "typed defaults and enums",
		src: `
replicas: integer | default=1 minimum=0 maximum=20 format=int32
ratio: number | default=0.5 enum="0.25, 0.5,1"
tier: string | enum="frontend,backend" default="frontend"
enabled: boolean | default=false
tags: "[]string | default=[a,b] minItems=1 maxItems=3"
env: "map[string]string | default=\"{k: v}\" minProperties=1 maxProperties=256"
code: integer | enum=1,2,3
`,
		want: `
type: object
properties:
  replicas: {type: integer, format: int32, default: 1, minimum: 0, maximum: 20}
  ratio: {type: number, default: 0.5, enum: [0.25, 0.5, 1]}
  tier: {type: string, default: frontend, enum: [frontend, backend]}
  enabled: {type: boolean, default: false}
  tags: {type: array, items: {type: string}, default: [a, b], minItems: 1, maxItems: 3}
  env: {type: object, additionalProperties: {type: string}, default: {k: v}, minProperties: 1, maxProperties: 256}
  code: {type: integer, enum: [1, 2, 3]}
`,
	}, {
		name: "strings, required, quoting",
		src: `
image: string | required=true minLength=1 description="The image to run, e.g. \"nginx\"."
memory: string | pattern="^[0-9]+(\.[0-9]+)?(Mi|Gi)$"
name: string | required
optional: string | required=false
empty: string | default=""
`,
		want: `
type: object
required: [image, name]
properties:
  image: {type: string, minLength: 1, description: 'The image to run, e.g. "nginx".'}
  memory: {type: string, pattern: '^[0-9]+(\.[0-9]+)?(Mi|Gi)$'}
  name: {type: string}
  optional: {type: string}
  empty: {type: string, default: ""}
`,
	}, {
		name: "immutable and CEL rules with messages",
		src: `
name: string | immutable=true
size: "integer | validation=\"self % 2 == 0\" message=\"size must be even\" validation=\"self < 100\""
keys: "map[string]string | maxProperties=8 validation=\"self.all(k, k.matches('^[a-z]+$'))\" message=\"keys are lower case letters\" immutable"
`,
		want: `
type: object
properties:
  name:
    type: string
    x-kubernetes-validations: [{rule: self == oldSelf, message: name is immutable}]
  size:
    type: integer
    x-kubernetes-validations: [{rule: self % 2 == 0, message: size must be even}, {rule: self < 100}]
  keys:
    type: object
    additionalProperties: {type: string}
    maxProperties: 8
    x-kubernetes-validations:
    - {rule: "self.all(k, k.matches('^[a-z]+$'))", message: keys are lower case letters}
    - {rule: self == oldSelf, message: keys is immutable}
`,
	}, {
		name: "nested objects, $self and lists of objects",
		src: `
database:
  $self: object | required=true description="The database." immutable=true default={}
  name: string | required=true
  size: string | default="1Gi" pattern="^[0-9]+[MG]i$"
  backup:
    enabled: boolean | default=false
ports:
- port: integer | required=true
  name: string
`,
		want: `
type: object
required: [database]
properties:
  database:
    type: object
    description: The database.
    default: {}
    required: [name]
    x-kubernetes-validations: [{rule: self == oldSelf, message: database is immutable}]
    properties:
      name: {type: string}
      size: {type: string, default: 1Gi, pattern: '^[0-9]+[MG]i$'}
      backup:
        type: object
        properties:
          enabled: {type: boolean, default: false}
  ports:
    type: array
    items:
      type: object
      required: [port]
      properties:
        port: {type: integer}
        name: {type: string}
`,
	}, {
		name: "$self of the top",
		src: `
$self: object | description="The spec." required=true
a: string
`,
		want: `
type: object
description: The spec.
properties:
  a: {type: string}
`,
		required: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, req, err := compileObject("schema.spec", fields(t, tt.src))
			if err != nil {
				t.Fatalf("compileObject() = %v", err)
			}
			if diff := cmp.Diff(props(t, tt.want), got); diff != "" {
				t.Errorf("schema (-want +got):\n%s", diff)
			}
			if req != tt.required {
				t.Errorf("required = %v, want %v", req, tt.required)
			}
		})
	}
}

func TestCompileObjectErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"unknown marker", `replicas: integer | minimun=0`, `schema.spec.replicas: unknown marker "minimun" (did you mean minimum?) in "integer | minimun=0"`},
		{"unknown type", `replicas: integr`, `schema.spec.replicas: unknown type "integr" (did you mean integer?) in "integr"`},
		{"unknown element type", `ports: "[]strin"`, `schema.spec.ports: unknown type "strin" (did you mean string?) in "[]strin"`},
		{"map with integer keys", `m: "map[int]string"`, `schema.spec.m: type "map[int]string": a map's keys are strings: map[string]T in "map[int]string"`},
		{"missing type", `a: "| required=true"`, `schema.spec.a: missing type in "| required=true"`},
		{"nested path", "db:\n  size: integer | default=big", `schema.spec.db.size: marker default: "big" is not an integer in "integer | default=big"`},
		{"marker on the wrong type", `name: string | minimum=1`, `schema.spec.name: marker minimum applies to integer and number, not string in "string | minimum=1"`},
		{"enum on a list", `a: "[]string | enum=a,b"`, `schema.spec.a: marker enum applies to string and integer and number, not array`},
		{"typed enum", `a: integer | enum=1,two`, `schema.spec.a: marker enum: "two" is not an integer`},
		{"duplicate marker", `a: integer | default=1 default=2`, `schema.spec.a: marker default given twice`},
		{"bad bool", `a: string | required=yes`, `schema.spec.a: marker required: "yes" is neither true nor false`},
		{"unterminated quote", `a: string | description="oops`, `schema.spec.a: marker description: unterminated quote`},
		{"no value", `a: string | default=`, `schema.spec.a: marker default has no value (write default="" for an empty one)`},
		{"message without validation", `a: string | message="x"`, `schema.spec.a: marker message: a message follows the validation it belongs to`},
		{"bad pattern", `a: string | pattern="(["`, `schema.spec.a: marker pattern: error parsing regexp`},
		{"minimum above maximum", `a: integer | minimum=5 maximum=1`, `schema.spec.a: minimum 5 is above maximum 1`},
		{"default below minimum", `a: integer | default=0 minimum=1`, `schema.spec.a: marker default: 0 is below the minimum 1`},
		{"default not in enum", `a: string | enum="x,y" default=z`, `schema.spec.a: marker default: "z" is not in the enum`},
		{"default misses pattern", `a: string | pattern="^[0-9]+$" default=abc`, `schema.spec.a: marker default: "abc" does not match the pattern ^[0-9]+$`},
		{"default of a list", `a: "[]string | default={}"`, `schema.spec.a: marker default: "{}" is not a list`},
		{"bad integer format", `a: integer | format=int16`, `schema.spec.a: marker format: "int16": an integer's format is int32 or int64`},
		{"null field", `a:`, `schema.spec.a: want a line "type | markers" or a map of fields, got nothing`},
		{"number field", `a: 3`, `schema.spec.a: want a line "type | markers" or a map of fields, got 3`},
		{"empty nested object", `a: {}`, `schema.spec.a: a nested object needs at least one field`},
		{"$self not an object", "a:\n  $self: string\n  b: string", `schema.spec.a.$self: the type must be object, not "string"`},
		{"list of two", "a: [{b: string}, {c: string}]", `schema.spec.a: a list of objects holds exactly one map`},
		{"list of a scalar", "a: [string]", `schema.spec.a: a list of objects holds one map of the items' fields, got "string"`},
		{"error inside list items", "a: [{b: integr}]", `schema.spec.a[].b: unknown type "integr"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := compileObject("schema.spec", fields(t, tt.src))
			if err == nil || !hasPrefix(err.Error(), tt.want) {
				t.Fatalf("compileObject() = %v, want an error starting %q", err, tt.want)
			}
		})
	}
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }
