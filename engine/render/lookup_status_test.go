package render

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/render/yamldoc"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestLookupInStatusTemplate(t *testing.T) {
	cfg := lookupConfig + "status: status.yaml\n"
	children, err := ReadParents(strings.NewReader(lookupChildren))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		status    string
		want      string // the status fields, as YAML
		wantReads []string
		wantErr   []string // the error's prefix, then substrings
	}{
		{
			name:      "declared kind",
			status:    `region: {{ (lookup "v1" "ConfigMap" "shared" "global").data.region }}`,
			want:      "region: eu\n",
			wantReads: []string{"ConfigMap shared/global found"},
		},
		{
			name:      "undeclared kind, a child of the parent",
			status:    `ready: {{ (lookup "apps/v1" "Deployment" .Namespace "web").status.readyReplicas }}`,
			want:      "ready: 3\n",
			wantReads: []string{"Deployment.apps default/web own found"},
		},
		{
			name:    "undeclared kind, not a child",
			status:  "a: 1\nb: {{ (lookup \"v1\" \"Secret\" .Namespace \"db\").type }}\n",
			wantErr: []string{"status.yaml:2: ", "lookup refused", "Secret default/db"},
		},
		{
			name:    "another namespace",
			status:  "a: 1\n\nb: {{ (lookup \"v1\" \"ConfigMap\" \"other\" \"private\").data.key }}\n",
			wantErr: []string{"status.yaml:3: ", "lookup refused", `namespace "other"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := loadSet(t, map[string]string{config.File: cfg, "web.yaml": lookupChildren, "status.yaml": tt.status})
			got, reads, err := s.RenderStatusWith(context.Background(), app(t, ""), children, lookupReader(t))
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("RenderStatusWith = %v, want an error", got)
				}
				wantPrefix(t, err.Error(), tt.wantErr[0])
				wantContains(t, err.Error(), tt.wantErr[1:]...)
				if !errors.Is(err, ErrLookupRefused) {
					t.Errorf("errors.Is(%v, ErrLookupRefused) = false", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("RenderStatusWith: %v", err)
			}
			want, err := yamldoc.Decode([]byte(tt.want))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("status fields (-want +got):\n%s", diff)
			}
			var gotReads []string
			for _, rd := range reads {
				gotReads = append(gotReads, summary(rd))
			}
			if diff := cmp.Diff(tt.wantReads, gotReads); diff != "" {
				t.Errorf("reads (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLookupConfig(t *testing.T) {
	tests := []struct {
		name    string
		lookups string
		want    []config.LookupRule
		wantErr string
	}{
		{
			name:    "valid",
			lookups: "- apiVersion: v1\n  kind: ConfigMap\n  namespaces: [shared, kube-public]\n- apiVersion: cert-manager.io/v1\n  kind: ClusterIssuer\n",
			want: []config.LookupRule{
				{APIVersion: "v1", Kind: "ConfigMap", Namespaces: []string{"shared", "kube-public"}},
				{APIVersion: "cert-manager.io/v1", Kind: "ClusterIssuer"},
			},
		},
		{name: "missing kind", lookups: "- apiVersion: v1\n", wantErr: "lookups[0]: apiVersion and kind are required"},
		{name: "missing apiVersion", lookups: "- kind: ConfigMap\n", wantErr: "lookups[0]: apiVersion and kind are required"},
		{name: "bad apiVersion", lookups: "- apiVersion: a/b/c\n  kind: X\n", wantErr: "lookups[0].apiVersion: "},
		{name: "bad namespace", lookups: "- apiVersion: v1\n  kind: ConfigMap\n- apiVersion: v1\n  kind: Secret\n  namespaces: [ok, Not_OK]\n",
			wantErr: `lookups[1].namespaces: "Not_OK": `},
		{name: "unknown field", lookups: "- apiVersion: v1\n  kind: ConfigMap\n  namespace: shared\n", wantErr: `loom.yaml:7: lookups[0].namespace: unknown field "namespace" (did you mean namespaces?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := LoadFS(fsOf(map[string]string{config.File: testConfig + "lookups:\n" + tt.lookups, "a.yaml": configMap("a", "  k: v\n")}), "testset")
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("LoadFS succeeded with lookups %+v, want an error", s.Config.Lookups)
				}
				wantPrefix(t, err.Error(), config.File+":")
				wantContains(t, err.Error(), tt.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("LoadFS: %v", err)
			}
			if diff := cmp.Diff(tt.want, s.Config.Lookups); diff != "" {
				t.Errorf("lookups (-want +got):\n%s", diff)
			}
		})
	}
}

func TestObjectsReader(t *testing.T) {
	r := lookupReader(t)
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	t.Run("get matches by group and kind, whatever the version", func(t *testing.T) {
		got, err := r.Get(schema.GroupVersionKind{Group: "apps", Version: "v1beta2", Kind: "Deployment"}, "default", "web")
		if err != nil || got == nil {
			t.Fatalf("Get = %v, %v; want Deployment web", got, err)
		}
		if missing, _ := r.Get(cm, "shared", "settings"); missing != nil {
			t.Errorf("Get of ConfigMap shared/settings = %v, want nil: it is in default", missing)
		}
	})
	t.Run("list is by name, in one namespace", func(t *testing.T) {
		items, err := r.List(cm, "default")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range items {
			got = append(got, (&unstructured.Unstructured{Object: it}).GetName())
		}
		if diff := cmp.Diff([]string{"alpha", "settings"}, got); diff != "" {
			t.Errorf("List (-want +got):\n%s", diff)
		}
	})
	t.Run("scope", func(t *testing.T) {
		got := map[string]bool{}
		for _, gvk := range []schema.GroupVersionKind{
			cm, {Version: "v1", Kind: "Namespace"}, {Version: "v1", Kind: "Node"},
			{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass"},
			{Group: "example.com", Version: "v1", Kind: "Thing"},
		} {
			got[gvk.Kind], _ = r.Namespaced(gvk)
		}
		want := map[string]bool{"ConfigMap": true, "Namespace": false, "Node": false, "StorageClass": false, "Thing": true}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Namespaced (-want +got):\n%s", diff)
		}
	})
}
