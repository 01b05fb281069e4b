package convert

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-operator/loom/engine/config"
)

const meta = "metadata: {name: web, namespace: default, labels: {app: web}}\n"

func TestConvert(t *testing.T) {
	c := newTestConverter(t, testSet, countTemplates)
	tests := []struct {
		name, in, to, want, err string
	}{{
		name: "rename into a nested object, default, rename in status",
		in:   "apiVersion: example.loom.dev/v1alpha1\nkind: App\n" + meta + "spec: {size: 2, memory: 1Gi}\nstatus: {address: http://web}\n",
		to:   "v1",
		want: "apiVersion: example.loom.dev/v1\nkind: App\n" + meta + "spec: {replicas: 2, resources: {memory: 1Gi}, tier: standard}\nstatus: {url: http://web}\n",
	}, {
		name: "rename out of a nested object",
		in:   "apiVersion: example.loom.dev/v1\nkind: App\n" + meta + "spec: {replicas: 2, resources: {memory: 1Gi}, tier: standard}\n",
		to:   "v1alpha1",
		want: "apiVersion: example.loom.dev/v1alpha1\nkind: App\n" + meta + "spec: {size: 2, memory: 1Gi}\n",
	}, {
		name: "join at the last separator",
		in:   "apiVersion: example.loom.dev/v1alpha1\nkind: App\n" + meta + "spec: {image: {repository: 'host:5000/app', tag: '1.2'}}\n",
		to:   "v1",
		want: "apiVersion: example.loom.dev/v1\nkind: App\n" + meta + "spec: {image: 'host:5000/app:1.2', tier: standard}\n",
	}, {
		name: "split back at the last separator",
		in:   "apiVersion: example.loom.dev/v1\nkind: App\n" + meta + "spec: {image: 'host:5000/app:1.2', tier: standard}\n",
		to:   "v1alpha1",
		want: "apiVersion: example.loom.dev/v1alpha1\nkind: App\n" + meta + "spec: {image: {repository: 'host:5000/app', tag: '1.2'}}\n",
	}, {
		name: "an image without a tag is not cut at the registry's port",
		in:   "apiVersion: example.loom.dev/v1\nkind: App\n" + meta + "spec: {image: 'host:5000/app', tier: standard}\n",
		to:   "v1alpha1",
		want: "apiVersion: example.loom.dev/v1alpha1\nkind: App\n" + meta + "spec: {image: {repository: 'host:5000/app'}}\n",
	}, {
		name: "an image without a registry or a tag",
		in:   "apiVersion: example.loom.dev/v1alpha1\nkind: App\n" + meta + "spec: {image: {repository: nginx}}\n",
		to:   "v1",
		want: "apiVersion: example.loom.dev/v1\nkind: App\n" + meta + "spec: {image: nginx, tier: standard}\n",
	}, {
		name: "an image object with no part joins to nothing, and is kept",
		in:   "apiVersion: example.loom.dev/v1alpha1\nkind: App\nmetadata: {name: web}\nspec: {image: {}}\n",
		to:   "v1",
		want: "apiVersion: example.loom.dev/v1\nkind: App\nmetadata: {name: web, annotations: {loom.dev/conversion-data: '{\"v1alpha1\":{\"fields\":{\"spec\":{\"image\":{}}},\"trip\":{\"spec\":{}}}}'}}\nspec: {tier: standard}\n",
	}, {
		name: "split at the last separator",
		in:   "apiVersion: example.loom.dev/v1alpha1\nkind: App\n" + meta + "spec: {address: 'a:b:c'}\n",
		to:   "v1",
		want: "apiVersion: example.loom.dev/v1\nkind: App\n" + meta + "spec: {endpoint: {host: 'a:b', port: c}, tier: standard}\n",
	}, {
		name: "split at the first separator",
		in:   "apiVersion: example.loom.dev/v2\nkind: App\n" + meta + "spec: {address: 'a:b:c'}\n",
		to:   "v1",
		want: "apiVersion: example.loom.dev/v1\nkind: App\n" + meta + "spec: {endpoint: {host: a, port: 'b:c'}}\n",
	}, {
		name: "join back",
		in:   "apiVersion: example.loom.dev/v1\nkind: App\n" + meta + "spec: {endpoint: {host: a, port: 'b:c'}}\n",
		to:   "v2",
		want: "apiVersion: example.loom.dev/v2\nkind: App\n" + meta + "spec: {address: 'a:b:c'}\n",
	}, {
		name: "a hub-only field is kept in the annotation",
		in:   "apiVersion: example.loom.dev/v1\nkind: App\n" + meta + "spec: {replicas: 3, tier: gold}\n",
		to:   "v1alpha1",
		want: "apiVersion: example.loom.dev/v1alpha1\nkind: App\nmetadata: {name: web, namespace: default, labels: {app: web}, annotations: {loom.dev/conversion-data: '{\"v1\":{\"fields\":{\"spec\":{\"tier\":\"gold\"}},\"trip\":{\"spec\":{\"tier\":\"standard\"}}}}'}}\nspec: {size: 3}\n",
	}, {
		name: "a hub-only field comes back from the annotation, over the default",
		in:   "apiVersion: example.loom.dev/v1alpha1\nkind: App\nmetadata: {name: web, namespace: default, labels: {app: web}, annotations: {loom.dev/conversion-data: '{\"v1\":{\"fields\":{\"spec\":{\"tier\":\"gold\"}},\"trip\":{\"spec\":{\"tier\":\"standard\"}}}}'}}\nspec: {size: 3}\n",
		to:   "v1",
		want: "apiVersion: example.loom.dev/v1\nkind: App\n" + meta + "spec: {replicas: 3, tier: gold}\n",
	}, {
		name: "a spoke-only field is kept in the annotation, other annotations stay",
		in:   "apiVersion: example.loom.dev/v1alpha1\nkind: App\nmetadata: {name: web, annotations: {team: a}}\nspec: {size: 1, legacy: x}\n",
		to:   "v1",
		want: "apiVersion: example.loom.dev/v1\nkind: App\nmetadata: {name: web, annotations: {team: a, loom.dev/conversion-data: '{\"v1alpha1\":{\"fields\":{\"spec\":{\"legacy\":\"x\"}},\"trip\":{\"spec\":{}}}}'}}\nspec: {replicas: 1, tier: standard}\n",
	}, {
		name: "a spoke-only field comes back",
		in:   "apiVersion: example.loom.dev/v1\nkind: App\nmetadata: {name: web, annotations: {team: a, loom.dev/conversion-data: '{\"v1alpha1\":{\"fields\":{\"spec\":{\"legacy\":\"x\"}},\"trip\":{\"spec\":{}}}}'}}\nspec: {replicas: 1, tier: standard}\n",
		to:   "v1alpha1",
		want: "apiVersion: example.loom.dev/v1alpha1\nkind: App\nmetadata: {name: web, annotations: {team: a}}\nspec: {size: 1, legacy: x}\n",
	}, {
		name: "spoke to spoke, through the hub",
		in:   "apiVersion: example.loom.dev/v1alpha1\nkind: App\n" + meta + "spec: {size: 4, address: 'h:1'}\n",
		to:   "v2",
		want: "apiVersion: example.loom.dev/v2\nkind: App\n" + meta + "spec: {replicas: 4, address: 'h:1'}\n",
	}, {
		name: "templates",
		in:   "apiVersion: example.loom.dev/v3\nkind: App\n" + meta + "spec: {count: 5}\nstatus: {url: http://web}\n",
		to:   "v1",
		want: "apiVersion: example.loom.dev/v1\nkind: App\n" + meta + "spec: {replicas: 5}\nstatus: {url: http://web}\n",
	}, {
		name: "the same version",
		in:   "apiVersion: example.loom.dev/v2\nkind: App\n" + meta + "spec: {replicas: 1}\n",
		to:   "v2",
		want: "apiVersion: example.loom.dev/v2\nkind: App\n" + meta + "spec: {replicas: 1}\n",
	}, {
		name: "no metadata",
		in:   "apiVersion: example.loom.dev/v2\nkind: App\nspec: {replicas: 1}\n",
		to:   "v1",
		want: "apiVersion: example.loom.dev/v1\nkind: App\nspec: {replicas: 1}\n",
	}, {
		name: "a version not served",
		in:   "apiVersion: example.loom.dev/v1\nkind: App\n" + meta,
		to:   "v9",
		err:  `version "v9" is not served by the set (it serves v1, v1alpha1, v2, v3)`,
	}, {
		name: "a parent of a version not served",
		in:   "apiVersion: example.loom.dev/v9\nkind: App\n" + meta,
		to:   "v1",
		err:  `convert App default/web: version "v9" is not served`,
	}, {
		name: "another kind",
		in:   "apiVersion: example.loom.dev/v1\nkind: Other\n" + meta,
		to:   "v1",
		err:  "not a App.example.loom.dev",
	}, {
		name: "a split of a value that is no string",
		in:   "apiVersion: example.loom.dev/v2\nkind: App\n" + meta + "spec: {address: 5}\n",
		to:   "v1",
		err:  "convert App default/web from v2 to v1: v2 to v1: loom.yaml versions[1].conversion.moves[0]: split spec.address: want a string, got int64",
	}, {
		name: "broken conversion data",
		in:   "apiVersion: example.loom.dev/v1\nkind: App\nmetadata: {name: web, annotations: {loom.dev/conversion-data: '{'}}\n",
		to:   "v2",
		err:  "annotation loom.dev/conversion-data: unexpected end of JSON input",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := obj(t, tt.in)
			before := in.DeepCopy()
			got, err := c.Convert(in, tt.to)
			if diff := cmp.Diff(before.Object, in.Object); diff != "" {
				t.Errorf("Convert changed its input (-before +after):\n%s", diff)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Convert() = %v, want an error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Convert() = %v", err)
			}
			if diff := cmp.Diff(obj(t, tt.want).Object, got.Object); diff != "" {
				t.Errorf("Convert (-want +got):\n%s", diff)
			}
			if err := c.RoundTrip(in); err != nil {
				t.Errorf("RoundTrip() = %v", err)
			}
		})
	}
}

func TestConvertTemplateError(t *testing.T) {
	boom := errors.New("down.yaml:3: executing at <.Spec.x>: boom")
	c := newTestConverter(t, testSet, fakeTemplates{
		"up.yaml":   countTemplates["up.yaml"],
		"down.yaml": func(map[string]any) (map[string]any, error) { return nil, boom },
	})
	_, err := c.Convert(obj(t, "apiVersion: example.loom.dev/v1\nkind: App\n"+meta+"spec: {replicas: 1}\n"), "v3")
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "convert App default/web from v1 to v3: down.yaml:3: ") {
		t.Fatalf("Convert() = %v, want the template's error, at its file:line", err)
	}
}

func TestNewRefusesBrokenMoves(t *testing.T) {
	tests := []struct{ name, moves, err string }{
		{name: "rename to a field the hub lacks", moves: "[{rename: {from: spec.size, to: spec.size}}]",
			err: `versions[0].conversion.moves[0].rename.to "spec.size": the schema of v1 has no such field`},
		{name: "rename from a field the version lacks", moves: "[{rename: {from: spec.count, to: spec.replicas}}]",
			err: `versions[0].conversion.moves[0].rename.from "spec.count": the schema of v1alpha1 has no such field`},
		{name: "split into a field the hub lacks", moves: "[{split: {from: spec.a, separator: ':', into: [spec.image, spec.nope]}}]",
			err: `versions[0].conversion.moves[0].split.into[1] "spec.nope": the schema of v1 has no such field`},
		{name: "join from a field the version lacks", moves: "[{join: {from: [spec.a, spec.nope], separator: ':', to: spec.image}}]",
			err: `versions[0].conversion.moves[0].join.from[1] "spec.nope"`},
		{name: "default of a field the hub lacks", moves: "[{default: {path: spec.nope, value: 1}}]",
			err: `versions[0].conversion.moves[0].default.path "spec.nope"`},
		{name: "into a map", moves: "[{rename: {from: spec.size, to: spec.labels.size}}]"},
		{name: "a split of an integer", moves: "[{split: {from: spec.size, separator: ':', into: [spec.image, spec.labels.tag]}}]",
			err: `versions[0].conversion.moves[0].split.from "spec.size": is of type integer in the schema of v1alpha1, but a split or a join needs a string`},
		{name: "a join into an integer", moves: "[{join: {from: [spec.a, spec.b], separator: ':', to: spec.replicas}}]",
			err: `versions[0].conversion.moves[0].join.to "spec.replicas": is of type integer in the schema of v1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "parent: {apiVersion: example.loom.dev/v1, kind: App}\nschema: {spec: {replicas: integer, image: string, labels: 'map[string]string'}}\n" +
				"versions:\n- name: v1alpha1\n  schema: {spec: {size: integer, a: string, b: string}}\n  conversion: {moves: " + tt.moves + "}\n"
			cfg, err := config.Parse([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			_, err = New(cfg, nil)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("New() = %v, want nil", err)
				}
				return
			}
			var me *MoveError
			if !errors.As(err, &me) || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("New() = %v, want a *MoveError containing %q", err, tt.err)
			}
		})
	}
}

func TestNewOneVersion(t *testing.T) {
	cfg, err := config.Parse([]byte("parent: {apiVersion: example.loom.dev/v1, kind: App}\nschema: {spec: {replicas: integer}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := New(cfg, nil); c != nil || err != nil {
		t.Fatalf("New() = %v, %v; want nil, nil for a set of one version", c, err)
	}
}

func TestCheckMetadata(t *testing.T) {
	tests := []struct{ name, in, out, err string }{
		{name: "the same", in: "{name: a, labels: {x: y}}", out: "{name: a, labels: {x: y}}"},
		{name: "the conversion data only", in: "{name: a}", out: "{name: a, annotations: {loom.dev/conversion-data: '{}'}}"},
		{name: "a label changed", in: "{name: a, labels: {x: y}}", out: "{name: a, labels: {x: z}}", err: "changed metadata (metadata.labels.x)"},
		{name: "an annotation added", in: "{name: a}", out: "{name: a, annotations: {b: c}}", err: "metadata.annotations"},
		{name: "the name removed", in: "{name: a, uid: u}", out: "{uid: u}", err: "metadata.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkMetadata(obj(t, "metadata: "+tt.in).Object, obj(t, "metadata: "+tt.out).Object)
			if (err != nil) != (tt.err != "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("checkMetadata() = %v, want an error containing %q", err, tt.err)
			}
		})
	}
}

func TestCut(t *testing.T) {
	tests := []struct {
		s, sep string
		n      int
		last   bool
		keep   string
		want   []string
	}{
		{"host:5000/app:1.2", ":", 2, true, "/", []string{"host:5000/app", "1.2"}},
		{"host:5000/app", ":", 2, true, "/", []string{"host:5000/app"}},
		{"host:5000/app", ":", 2, true, "", []string{"host", "5000/app"}},
		{"app", ":", 2, true, "", []string{"app"}},
		{"app:", ":", 2, true, "", []string{"app", ""}},
		{"a:b:c", ":", 2, false, "", []string{"a", "b:c"}},
		{"a:b:c", ":", 3, false, "", []string{"a", "b", "c"}},
		{"a:b:c", ":", 3, true, "", []string{"a", "b", "c"}},
		{"a/b:c", ":", 2, false, "/", []string{"a/b:c"}},
		{"a::b", "::", 2, false, "", []string{"a", "b"}},
	}
	for _, tt := range tests {
		got := cut(tt.s, tt.sep, tt.n, tt.last, tt.keep)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("cut(%q, %q, %d, %v, %q) (-want +got):\n%s", tt.s, tt.sep, tt.n, tt.last, tt.keep, diff)
		}
		if j := strings.Join(got, tt.sep); j != tt.s {
			t.Errorf("cut(%q) joins back to %q", tt.s, j)
		}
	}
}

func TestConvertLimits(t *testing.T) {
	big := strings.Repeat("x", MaxObjectBytes)
	c := newTestConverter(t, testSet, fakeTemplates{
		"up.yaml":   countTemplates["up.yaml"],
		"down.yaml": func(map[string]any) (map[string]any, error) { return map[string]any{"count": big}, nil },
	})
	hub := obj(t, "apiVersion: example.loom.dev/v1\nkind: App\n"+meta+"spec: {replicas: 1}\n")
	if _, err := c.Convert(hub, "v3"); err == nil || !strings.Contains(err.Error(), "down.yaml: the template rendered a spec of 3145740 bytes, more than 3145728") {
		t.Errorf("Convert() of a huge spec = %v, want the size limit", err)
	}
	// A field v1 cannot hold, too big for the annotation.
	legacy := obj(t, "apiVersion: example.loom.dev/v1alpha1\nkind: App\n"+meta+"spec: {size: 1}\n")
	legacy.Object["spec"].(map[string]any)["legacy"] = strings.Repeat("y", MaxDataBytes)
	if _, err := c.Convert(legacy, "v1"); err == nil || !strings.Contains(err.Error(), "annotation loom.dev/conversion-data: the fields a version cannot hold take 131137 bytes, more than 131072") {
		t.Errorf("Convert() of a huge spoke-only field = %v, want the annotation's limit", err)
	}
}

// A parent converted, edited in the other version, and converted back:
// a kept field comes back unless the edit changed what the conversion
// gives at its path, where the edit wins.
func TestConvertAfterAnEdit(t *testing.T) {
	c := newTestConverter(t, testSet, countTemplates)
	tests := []struct {
		name, in, via string
		edit          func(spec map[string]any)
		want          string
	}{{
		name: "an edit elsewhere keeps the hub-only field",
		in:   "apiVersion: example.loom.dev/v1\nkind: App\n" + meta + "spec: {replicas: 3, tier: gold}\n",
		via:  "v1alpha1",
		edit: func(spec map[string]any) { spec["size"] = int64(5) },
		want: "apiVersion: example.loom.dev/v1\nkind: App\n" + meta + "spec: {replicas: 5, tier: gold}\n",
	}, {
		name: "an edit of the joined string wins over the kept parts",
		in:   "apiVersion: example.loom.dev/v1alpha1\nkind: App\n" + meta + "spec: {image: {repository: a, tag: b/c}}\n",
		via:  "v1",
		edit: func(spec map[string]any) { spec["image"] = "nginx:2" },
		want: "apiVersion: example.loom.dev/v1alpha1\nkind: App\n" + meta + "spec: {image: {repository: nginx, tag: '2'}}\n",
	}, {
		name: "no edit gives the parts back",
		in:   "apiVersion: example.loom.dev/v1alpha1\nkind: App\n" + meta + "spec: {image: {repository: a, tag: b/c}}\n",
		via:  "v1",
		edit: func(map[string]any) {},
		want: "apiVersion: example.loom.dev/v1alpha1\nkind: App\n" + meta + "spec: {image: {repository: a, tag: b/c}}\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := obj(t, tt.in)
			mid, err := c.Convert(in, tt.via)
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(mid.Object["spec"].(map[string]any))
			got, err := c.Convert(mid, in.GroupVersionKind().Version)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(obj(t, tt.want).Object, got.Object); diff != "" {
				t.Errorf("after the edit (-want +got):\n%s", diff)
			}
		})
	}
}
