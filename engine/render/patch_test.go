package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/object"
)

// patchConfig is a loom.yaml that declares Namespaces and ConfigMaps (in
// the parent's namespace and in shared) as lookups: the kinds a patch
// child may be of.
const patchConfig = testConfig + `lookups:
- apiVersion: v1
  kind: Namespace
  namespaces: [team-a]
- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRole
- apiVersion: v1
  kind: ConfigMap
  namespaces: [shared]
`

// TestPatchChildren: a patch child keeps the fields its template sets,
// gets no ownerReference and no Loom labels (they would make the garbage
// collector or Loom's prune delete someone else's object), and is bound
// as a lookup: its kind declared in lookups, a namespaced one in the
// parent's namespace or a declared one.
func TestPatchChildren(t *testing.T) {
	files := map[string]string{
		config_: patchConfig,
		"a.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n  labels:\n    team: a\n  annotations:\n    loom.dev/manage: patch\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared-cm\n  namespace: shared\n  annotations:\n    loom.dev/manage: patch\ndata:\n  a: b\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: here\n  annotations:\n    loom.dev/manage: patch\ndata:\n  a: b\n",
	}
	kids := mustRender(t, loadSet(t, files), app(t, ""))
	got := map[string]string{}
	for _, k := range kids {
		got[k.GetName()] = k.GetAnnotations()[object.AnnotationManage] + "|" + k.GetNamespace() + "|" +
			k.GetLabels()[object.LabelManagedBy] + "|" + k.GetLabels()["team"] + "|" + boolText(len(k.GetOwnerReferences()) > 0)
	}
	want := map[string]string{
		"team-a":    "patch|||a|",
		"shared-cm": "patch|shared|||",
		"here":      "patch|default|||",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("children (-want +got):\n%s", d)
	}
}

// TestPatchIsBound: a patch child of a kind the set does not declare, or
// in a namespace it may not read, or in a workload cluster, is a render
// error naming the child.
func TestPatchIsBound(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{
			name: "an undeclared kind",
			doc:  "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  annotations:\n    loom.dev/manage: patch\n",
			want: `a.yaml:1 (document 1) Secret s: loom.dev/manage is patch: Loom reads this child as a lookup, so loom.yaml's lookups must declare v1 Secret`,
		},
		{
			name: "a namespace not declared",
			doc:  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: other\n  annotations:\n    loom.dev/manage: patch\n",
			want: `a.yaml:1 (document 1) ConfigMap cm: loom.dev/manage is patch: namespace "other" is neither the parent's ("default") nor declared for ConfigMap in loom.yaml lookups`,
		},
		{
			name: "a Namespace the parent's spec could aim anywhere",
			doc:  "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kube-system\n  labels:\n    team: a\n  annotations:\n    loom.dev/manage: patch\n",
			want: `Namespace kube-system: loom.dev/manage is patch: Namespace "kube-system" is neither the parent's ("default") nor listed in the namespaces of loom.yaml's Namespace lookup`,
		},
		{
			name: "a cluster-scoped kind not declared in clusterScoped",
			doc:  "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: admin\n  labels:\n    team: a\n  annotations:\n    loom.dev/manage: patch\n",
			want: `loom.dev/manage is patch: ClusterRole.rbac.authorization.k8s.io is cluster-scoped, and a namespaced parent patches one only when loom.yaml's clusterScoped declares its kind`,
		},
		{
			name: "a workload cluster",
			doc:  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    loom.dev/manage: patch\n    loom.dev/cluster: east\n",
			want: `loom.dev/manage is patch: Loom patches objects in the cluster it runs in`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := loadSet(t, map[string]string{config_: patchConfig, "a.yaml": tt.doc})
			wantContains(t, renderErr(t, s, app(t, "")), tt.want)
		})
	}
}
