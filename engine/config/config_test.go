package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParse(t *testing.T) {
	const parent = "parent: {apiVersion: example.loom.dev/v1alpha1, kind: MyResource}\n"
	tests := []struct {
		name, src, err string
	}{
		{name: "parent only", src: parent},
		{name: "everything", src: parent + `readiness: [{kind: Job, condition: Complete, failedCondition: Failed}, {kind: ConfigMap, ignore: true}]
status: status.yaml
lookups: [{apiVersion: v1, kind: Secret, namespaces: [shared]}]
rollout: {steps: [1, 100%]}
`},
		{name: "no parent", src: "status: s.yaml\n", err: "parent.apiVersion and parent.kind are required"},
		{name: "bad parent apiVersion", src: "parent: {apiVersion: a/b/c, kind: X}\n", err: "parent.apiVersion"},
		{name: "unknown field", src: parent + "templates: x\n", err: `templates: unknown field "templates"`},
		{name: "readiness without kind", src: parent + "readiness: [{condition: Ready}]\n", err: "readiness[0].kind is required"},
		{name: "readiness without condition", src: parent + "readiness: [{kind: Job}]\n", err: "readiness[0] needs condition or ignore"},
		{name: "lookup without kind", src: parent + "lookups: [{apiVersion: v1}]\n", err: "lookups[0]: apiVersion and kind are required"},
		{name: "lookup bad namespace", src: parent + "lookups: [{apiVersion: v1, kind: Secret, namespaces: [Bad_NS]}]\n", err: `lookups[0].namespaces: "Bad_NS"`},
		{name: "cluster-scoped kinds", src: parent + "clusterScoped: [{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole}, {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding}]\n"},
		{name: "cluster-scoped without kind", src: parent + "clusterScoped: [{apiVersion: v1}]\n", err: "clusterScoped[0]: apiVersion and kind are required"},
		{name: "cluster-scoped bad apiVersion", src: parent + "clusterScoped: [{apiVersion: a/b/c, kind: X}]\n", err: "clusterScoped[0].apiVersion"},
		{name: "cluster-scoped twice", src: parent + "clusterScoped: [{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole}, {apiVersion: rbac.authorization.k8s.io/v1beta1, kind: ClusterRole}]\n", err: "clusterScoped[1]: ClusterRole.rbac.authorization.k8s.io is declared twice"},
		{name: "roles to bind", src: parent + "bindRoles: [{kind: ClusterRole, name: view}, {kind: Role, name: reader}]\n"},
		{name: "role to bind of no RBAC kind", src: parent + "bindRoles: [{kind: Group, name: view}]\n", err: `bindRoles[0].kind "Group": must be Role or ClusterRole`},
		{name: "role to bind without name", src: parent + "bindRoles: [{kind: Role}]\n", err: "bindRoles[0].name is required"},
		{name: "role to bind with a slash", src: parent + "bindRoles: [{kind: Role, name: a/b}]\n", err: `bindRoles[0].name "a/b"`},
		{name: "notes of a chart", src: parent + "chart: chart\nnotes: true\n"},
		{name: "notes without a chart", src: parent + "notes: true\n", err: "notes: only a chart set has a NOTES.txt"},
		{name: "compact schema", src: parent + "schema: {spec: {image: string | required=true}}\n"},
		{name: "openAPI schema", src: parent + "schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}\n"},
		{name: "names and scope", src: "parent: {apiVersion: example.loom.dev/v1alpha1, kind: MyResource, plural: myresources, singular: myresource, shortNames: [myr], categories: [loom], scope: Cluster}\n"},
		{name: "both schema forms", src: parent + "schema: {spec: {a: string}, openAPIV3Schema: {type: object}}\n", err: "not both"},
		{name: "empty schema", src: parent + "schema: {allowBreakingChanges: true}\n", err: "schema: needs spec"},
		{name: "bad scope", src: "parent: {apiVersion: example.loom.dev/v1alpha1, kind: MyResource, scope: Global}\n", err: `parent.scope: "Global"`},
		{name: "bad short name", src: "parent: {apiVersion: example.loom.dev/v1alpha1, kind: MyResource, shortNames: [My_R]}\n", err: `parent.shortNames[0]: "My_R"`},
		{name: "printer column without path", src: "parent: {apiVersion: example.loom.dev/v1alpha1, kind: MyResource, printerColumns: [{name: Image, type: string}]}\n", err: "parent.printerColumns[0]"},
		{name: "service account", src: parent + "serviceAccountName: deployer\n"},
		{name: "bad service account", src: parent + "serviceAccountName: Deployer_1\n", err: `serviceAccountName "Deployer_1"`},
		{name: "service account of a cluster-scoped parent", src: "parent: {apiVersion: example.loom.dev/v1alpha1, kind: MyResource, scope: Cluster}\nserviceAccountName: d\n", err: "a cluster-scoped parent has no namespace"},
		{name: "bad rollout", src: parent + "rollout: {steps: [1, 50%]}\n", err: `rollout.steps: the last step must be "100%"`},
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
			want := schema.GroupVersionKind{Group: "example.loom.dev", Version: "v1alpha1", Kind: "MyResource"}
			if diff := cmp.Diff(want, c.ParentGVK()); diff != "" {
				t.Errorf("ParentGVK (-want +got):\n%s", diff)
			}
		})
	}
}
