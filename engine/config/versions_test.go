package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseVersions(t *testing.T) {
	const head = "parent: {apiVersion: example.loom.dev/v1, kind: MyResource}\nschema: {spec: {replicas: integer}}\n"
	const v1alpha1 = "versions:\n- name: v1alpha1\n  schema: {spec: {size: integer}}\n"
	tests := []struct {
		name, src, err string
		storage        string
		names          []string
	}{
		{name: "one version", src: head, storage: "v1", names: []string{"v1"}},
		{name: "one version, storage named", src: head + "storageVersion: v1\n", storage: "v1", names: []string{"v1"}},
		{name: "storage not served", src: head + "storageVersion: v2\n", err: `storageVersion "v2": the set serves only v1`},
		{name: "a rename", src: head + v1alpha1 + "  conversion: {moves: [{rename: {from: spec.size, to: spec.replicas}}]}\n", storage: "v1", names: []string{"v1", "v1alpha1"}},
		{name: "stored in the old version", src: head + "storageVersion: v1alpha1\n" + v1alpha1, storage: "v1alpha1", names: []string{"v1", "v1alpha1"}},
		{name: "storage unknown", src: head + "storageVersion: v2\n" + v1alpha1, err: `storageVersion "v2": not a version of the set (v1, v1alpha1)`},
		{name: "templates", src: head + v1alpha1 + "  conversion: {toHub: conv/up.yaml, fromHub: conv/down.yaml}\n", storage: "v1", names: []string{"v1", "v1alpha1"}},
		{name: "one template", src: head + v1alpha1 + "  conversion: {toHub: conv/up.yaml}\n", err: "versions[0].conversion: a template conversion needs both toHub and fromHub"},
		{name: "template outside", src: head + v1alpha1 + "  conversion: {toHub: ../up.yaml, fromHub: d.yaml}\n", err: `versions[0].conversion.toHub "../up.yaml": must be a path inside the set's folder`},
		{name: "moves and templates", src: head + v1alpha1 + "  conversion: {toHub: u.yaml, fromHub: d.yaml, moves: [{rename: {from: spec.a, to: spec.b}}]}\n", err: "versions[0].conversion: give either moves or the templates"},
		{name: "a move of two kinds", src: head + v1alpha1 + "  conversion: {moves: [{rename: {from: spec.a, to: spec.b}, default: {path: spec.c, value: 1}}]}\n", err: "versions[0].conversion.moves[0]: give exactly one of rename, split, join and default"},
		{name: "a move of metadata", src: head + v1alpha1 + "  conversion: {moves: [{rename: {from: metadata.name, to: spec.name}}]}\n", err: `versions[0].conversion.moves[0].rename.from "metadata.name": must be a field below spec or status`},
		{name: "an empty field name", src: head + v1alpha1 + "  conversion: {moves: [{rename: {from: spec..a, to: spec.b}}]}\n", err: `rename.from "spec..a": has an empty field name`},
		{name: "a split", src: head + v1alpha1 + "  conversion: {moves: [{split: {from: spec.image, separator: ':', into: [spec.image.repository, spec.image.tag], last: true}}]}\n", storage: "v1", names: []string{"v1", "v1alpha1"}},
		{name: "a split into one", src: head + v1alpha1 + "  conversion: {moves: [{split: {from: spec.image, separator: ':', into: [spec.repo]}}]}\n", err: "split.into: name at least two fields"},
		{name: "a split without separator", src: head + v1alpha1 + "  conversion: {moves: [{split: {from: spec.image, into: [spec.a, spec.b]}}]}\n", err: "split.separator is required"},
		{name: "a join", src: head + v1alpha1 + "  conversion: {moves: [{join: {from: [spec.image.repository, spec.image.tag], separator: ':', to: spec.image, last: true, keep: /}}]}\n", storage: "v1", names: []string{"v1", "v1alpha1"}},
		{name: "a join of one", src: head + v1alpha1 + "  conversion: {moves: [{join: {from: [spec.repo], separator: ':', to: spec.image}}]}\n", err: "join.from: name at least two fields"},
		{name: "a join without separator", src: head + v1alpha1 + "  conversion: {moves: [{join: {from: [spec.a, spec.b], to: spec.image}}]}\n", err: "join.separator is required"},
		{name: "a join to metadata", src: head + v1alpha1 + "  conversion: {moves: [{join: {from: [spec.a, spec.b], separator: ':', to: metadata.name}}]}\n", err: `join.to "metadata.name"`},
		{name: "a default", src: head + v1alpha1 + "  conversion: {moves: [{default: {path: spec.tier, value: standard}}]}\n", storage: "v1", names: []string{"v1", "v1alpha1"}},
		{name: "a default without value", src: head + v1alpha1 + "  conversion: {moves: [{default: {path: spec.tier}}]}\n", err: "default.value is required"},
		{name: "the hub again", src: head + "versions:\n- name: v1\n  schema: {spec: {a: string}}\n", err: `versions[0].name "v1": is the hub`},
		{name: "twice", src: head + v1alpha1 + "- name: v1alpha1\n  schema: {spec: {a: string}}\n", err: `versions[1].name "v1alpha1": is declared twice`},
		{name: "not a version name", src: head + "versions:\n- name: latest\n  schema: {spec: {a: string}}\n", err: `versions[0].name "latest": must be a Kubernetes version name`},
		{name: "v0", src: head + "versions:\n- name: v0\n  schema: {spec: {a: string}}\n", err: `versions[0].name "v0"`},
		{name: "beta without number", src: head + "versions:\n- name: v2beta\n  schema: {spec: {a: string}}\n", err: `versions[0].name "v2beta"`},
		{name: "no schema", src: head + "versions:\n- name: v1beta1\n", err: "versions[0].schema is required"},
		{name: "hub without schema", src: "parent: {apiVersion: example.loom.dev/v1, kind: MyResource}\n" + v1alpha1, err: "needs the hub's schema"},
		{name: "chart", src: head + "chart: c\n" + v1alpha1, err: "a chart set's parent has one version"},
		{name: "warning without deprecated", src: head + v1alpha1 + "  deprecationWarning: go to v1\n", err: "versions[0].deprecationWarning: set deprecated: true too"},
		{name: "deprecated", src: head + v1alpha1 + "  deprecated: true\n  deprecationWarning: go to v1\n", storage: "v1", names: []string{"v1", "v1alpha1"}},
		{name: "breaking changes on a version", src: head + "versions:\n- name: v1alpha1\n  schema: {spec: {a: string}, allowBreakingChanges: true}\n", err: "versions[0].schema.allowBreakingChanges"},
		{name: "both schema forms in a version", src: head + "versions:\n- name: v1alpha1\n  schema: {spec: {a: string}, openAPIV3Schema: {type: object}}\n", err: "versions[0].schema: give either"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.src))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse() = %v, want an error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse() = %v, want nil", err)
			}
			if got := c.StorageVersionOrHub(); got != tt.storage {
				t.Errorf("StorageVersionOrHub() = %q, want %q", got, tt.storage)
			}
			if diff := cmp.Diff(tt.names, c.VersionNames()); diff != "" {
				t.Errorf("VersionNames (-want +got):\n%s", diff)
			}
			gvks := c.ParentGVKs()
			if len(gvks) != len(tt.names) || gvks[0] != c.ParentGVK() {
				t.Errorf("ParentGVKs() = %v, want the hub first and one per version", gvks)
			}
		})
	}
}

func TestConversionTemplates(t *testing.T) {
	c, err := Parse([]byte("parent: {apiVersion: example.loom.dev/v1, kind: MyResource}\nschema: {spec: {replicas: integer}}\n" +
		"versions:\n- name: v1alpha1\n  schema: {spec: {size: integer}}\n  conversion: {toHub: conv/up.yaml, fromHub: conv/down.yaml}\n" +
		"- name: v1beta1\n  schema: {spec: {size: integer}}\n  conversion: {moves: [{rename: {from: spec.size, to: spec.replicas}}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"conv/up.yaml", "conv/down.yaml"}, c.ConversionTemplates()); diff != "" {
		t.Errorf("ConversionTemplates (-want +got):\n%s", diff)
	}
}
