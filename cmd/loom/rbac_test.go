package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/internal/testutil"
)

// The chart's ClusterRole rules are `loom rbac`'s for the shipped sets:
// `make manifests` (go test -update) rewrites the file.
func TestChartRBACRulesAreGenerated(t *testing.T) {
	got, err := execute(t, "", "rbac", "-t", filepath.Join(repoRoot, "templates"), "--rules")
	if err != nil {
		t.Fatalf("loom rbac: %v\n%s", err, got)
	}
	path := filepath.Join(repoRoot, "deploy", "chart", "files", "rbac", "rules.yaml")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s is not what loom rbac generates (run make manifests) (-file +generated):\n%s", path, diff)
	}
}

func TestRBACCommand(t *testing.T) {
	set := filepath.Join(repoRoot, "templates", "myresource")
	for _, tc := range []struct {
		name    string
		args    []string
		kinds   []string // kind/name of each object printed
		wantErr string
	}{
		{name: "a ClusterRole, and a Role for the conversion webhook's Secret", args: []string{"-t", set}, kinds: []string{"ClusterRole/loom", "ClusterRoleBinding/loom", "Role/loom", "RoleBinding/loom"}},
		{name: "no webhook: a ClusterRole alone", args: []string{"-t", set, "--webhook-bind-address=0"}, kinds: []string{"ClusterRole/loom", "ClusterRoleBinding/loom"}},
		{name: "the Lease in its namespace", args: []string{"-t", set, "--leader-elect", "--name", "x"},
			kinds: []string{"ClusterRole/x", "ClusterRoleBinding/x", "Role/x", "RoleBinding/x"}},
		{name: "sharded: the group's Leases", args: []string{"-t", set, "--sharded", "--shard-namespace", "shards"},
			kinds: []string{"ClusterRole/loom", "ClusterRoleBinding/loom", "Role/loom", "RoleBinding/loom", "Role/loom", "RoleBinding/loom"}},
		{name: "one namespace: Roles", args: []string{"-t", set, "-n", "shop"},
			kinds: []string{"ClusterRole/loom", "ClusterRoleBinding/loom", "Role/loom", "RoleBinding/loom", "Role/loom", "RoleBinding/loom", "Role/loom", "RoleBinding/loom"}},
		{name: "bad output", args: []string{"-t", set, "-o", "toml"}, wantErr: `output format "toml"`},
		{name: "bad account", args: []string{"-t", set, "--service-account", "loom"}, wantErr: "want NAMESPACE/NAME"},
		{name: "rules with Roles", args: []string{"-t", set, "-n", "shop", "--rules"}, wantErr: "with --namespace there are Roles too"},
		{name: "no set", args: []string{"-t", t.TempDir()}, wantErr: "no template set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := execute(t, "", append([]string{"rbac"}, tc.args...)...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, doc := range strings.Split(out, "\n---\n") {
				var o struct {
					Kind     string
					Metadata struct{ Name string }
					Rules    []rbacv1.PolicyRule
				}
				if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
					t.Fatal(err)
				}
				kinds = append(kinds, o.Kind+"/"+o.Metadata.Name)
			}
			if diff := cmp.Diff(tc.kinds, kinds); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

// -o json and -o yaml print a v1 List, as every command's -o does.
func TestRBACOutputList(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		out, err := execute(t, "", "rbac", "-t", filepath.Join(repoRoot, "templates", "myresource"), "-o", format)
		if err != nil {
			t.Fatalf("-o %s: %v", format, err)
		}
		var list struct {
			Kind  string
			Items []struct{ Kind string }
		}
		if err := yaml.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("-o %s: %v\n%s", format, err, out)
		}
		var kinds []string
		for _, i := range list.Items {
			kinds = append(kinds, i.Kind)
		}
		if list.Kind != "List" || !cmp.Equal(kinds, []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}) {
			t.Errorf("-o %s: a %s of %v, want a List of ClusterRole, ClusterRoleBinding, Role, RoleBinding", format, list.Kind, kinds)
		}
	}
}

// A set of several versions gets its conversion webhook's Secret, named
// by --webhook-cert-secret, in --loom-namespace.
func TestRBACWebhookCertSecret(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "widgets")
	testutil.WriteFiles(t, dir, map[string]string{
		"loom.yaml": `parent: {apiVersion: example.com/v1, kind: Widget}
schema: {spec: {replicas: integer}}
versions:
- name: v1alpha1
  schema: {spec: {size: integer}}
  conversion: {moves: [{rename: {from: spec.size, to: spec.replicas}}]}
`,
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n",
	})
	out, err := execute(t, "", "rbac", "-t", dir, "--loom-namespace", "ops", "--webhook-cert-secret", "hook-tls")
	if err != nil {
		t.Fatal(err)
	}
	var role struct {
		Kind     string
		Metadata struct{ Namespace string }
		Rules    []rbacv1.PolicyRule
	}
	for _, doc := range strings.Split(out, "\n---\n") {
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			t.Fatal(err)
		}
		if role.Kind == "Role" && role.Metadata.Namespace == "ops" {
			break
		}
	}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"hook-tls"}, Verbs: []string{"get", "update"}},
	}
	if role.Kind != "Role" || !cmp.Equal(want, role.Rules) {
		t.Errorf("no Role in ops with the webhook Secret's rules (-want +got):\n%s\n%s", cmp.Diff(want, role.Rules), out)
	}
}
