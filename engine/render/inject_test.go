package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// webAppSetID is the ApplySet ID of the App web in namespace default,
// computed outside Go: the unpadded URL-safe base64 of
//
//	printf web.default.App.example.com | sha256sum
const webAppSetID = "applyset-D_YSZBlQreU9VPuJq0a-dh4leAUnoO6H3Z0vC-CUzsk-v1"

// TestInject checks the metadata every child gets from its parent.
func TestInject(t *testing.T) {
	controllerRef := map[string]any{
		"apiVersion":         "example.com/v1",
		"kind":               "App",
		"name":               "web",
		"uid":                "uid-1",
		"controller":         true,
		"blockOwnerDeletion": true,
	}
	loomLabels := map[string]any{object.LabelPartOf: webAppSetID, object.LabelManagedBy: object.ManagedByValue}
	tests := []struct {
		name     string
		metadata string // the child's metadata, indented by two spaces
		want     string // the child's metadata after injection
	}{
		{
			name:     "namespace filled when empty",
			metadata: "  name: cm\n",
			want:     "name: cm\nnamespace: default\n",
		},
		{
			name:     "same namespace kept",
			metadata: "  name: cm\n  namespace: default\n",
			want:     "name: cm\nnamespace: default\n",
		},
		{
			name:     "template labels kept beside Loom's",
			metadata: "  name: cm\n  labels:\n    app: web\n    app.kubernetes.io/managed-by: loom\n",
			want:     "name: cm\nnamespace: default\nlabels:\n  app: web\n",
		},
		{
			name:     "template ownerReferences kept before the controller's",
			metadata: "  name: cm\n  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: base\n    uid: uid-2\n",
			want:     "name: cm\nnamespace: default\nownerReferences:\n- apiVersion: v1\n  kind: ConfigMap\n  name: base\n  uid: uid-2\n",
		},
		{
			name:     "a non-controller reference is kept",
			metadata: "  name: cm\n  ownerReferences:\n  - {apiVersion: v1, kind: ConfigMap, name: base, uid: uid-2, controller: false}\n",
			want:     "name: cm\nnamespace: default\nownerReferences:\n- {apiVersion: v1, kind: ConfigMap, name: base, uid: uid-2, controller: false}\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := loadSet(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n" + tt.metadata})
			got := mustRender(t, s, app(t, ""))
			if len(got) != 1 {
				t.Fatalf("rendered %v, want one ConfigMap", names(got))
			}
			want := fixture(t, tt.want).Object
			labels, _ := want["labels"].(map[string]any)
			if labels == nil {
				labels = map[string]any{}
				want["labels"] = labels
			}
			for k, v := range loomLabels {
				labels[k] = v
			}
			refs, _ := want["ownerReferences"].([]any)
			want["ownerReferences"] = append(refs, controllerRef)
			if diff := cmp.Diff(want, got[0].Object["metadata"]); diff != "" {
				t.Errorf("metadata mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInjectNoUID checks that a parent without a uid (as given to loom
// render) gets an ownerReference without one, rather than an empty one.
func TestInjectNoUID(t *testing.T) {
	s := loadSet(t, map[string]string{"cm.yaml": configMap("cm", "  a: b\n")})
	parent := fixture(t, "apiVersion: example.com/v1\nkind: App\nmetadata:\n  name: web\n  namespace: default\n")
	got := mustRender(t, s, parent)
	want := []any{map[string]any{
		"apiVersion":         "example.com/v1",
		"kind":               "App",
		"name":               "web",
		"controller":         true,
		"blockOwnerDeletion": true,
	}}
	if diff := cmp.Diff(want, got[0].Object["metadata"].(map[string]any)["ownerReferences"]); diff != "" {
		t.Errorf("ownerReferences mismatch (-want +got):\n%s", diff)
	}
}

// TestInjectClusterScopedParent checks that a cluster-scoped parent may own
// cluster-scoped children, whose namespace stays empty.
func TestInjectClusterScopedParent(t *testing.T) {
	s := loadSet(t, map[string]string{"cr.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: reader\nrules: []\n"})
	parent := fixture(t, "apiVersion: example.com/v1\nkind: App\nmetadata:\n  name: web\n  uid: uid-1\n")
	got := mustRender(t, s, parent)
	if len(got) != 1 {
		t.Fatalf("rendered %v, want one ClusterRole", names(got))
	}
	if ns := got[0].GetNamespace(); ns != "" {
		t.Errorf("namespace = %q, want none", ns)
	}
	refs := got[0].GetOwnerReferences()
	if len(refs) != 1 || refs[0].Name != "web" || refs[0].UID != "uid-1" || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("ownerReferences = %+v, want one controller reference to App web", refs)
	}
	id := object.ApplySetID("web", "", "App", "example.com")
	if got := got[0].GetLabels()[object.LabelPartOf]; got != id {
		t.Errorf("label %s = %q, want %q", object.LabelPartOf, got, id)
	}
}

// TestInjectErrors checks the children that injection refuses.
func TestInjectErrors(t *testing.T) {
	tests := []struct {
		name  string
		child string
		want  string
	}{
		{
			name:  "other namespace",
			child: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: other\n",
			want:  `a.yaml:1 (document 1) ConfigMap cm: metadata.namespace is "other", but children must live in their parent's namespace "default"`,
		},
		{
			name:  "ClusterRole under a namespaced parent",
			child: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: reader\n",
			want:  "a.yaml:1 (document 1) ClusterRole reader: ClusterRole.rbac.authorization.k8s.io is cluster-scoped: a namespaced parent cannot own it unless its set declares the kind in loom.yaml's clusterScoped",
		},
		{
			name:  "Namespace under a namespaced parent",
			child: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n",
			want:  "a.yaml:1 (document 1) Namespace team: Namespace is cluster-scoped: a namespaced parent cannot own it unless its set declares the kind in loom.yaml's clusterScoped",
		},
		{
			name:  "template names a controller",
			child: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  ownerReferences:\n  - {apiVersion: apps/v1, kind: Deployment, name: other, uid: u, controller: true}\n",
			want:  "a.yaml:1 (document 1) ConfigMap cm: metadata.ownerReferences names a controller (Deployment other), but Loom's parent must be the controller",
		},
		{
			name:  "template sets part-of",
			child: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels:\n    applyset.kubernetes.io/part-of: someone-else\n",
			want:  "a.yaml:1 (document 1) ConfigMap cm: label applyset.kubernetes.io/part-of is reserved for Loom and must not be set by a template",
		},
		{
			name:  "template sets managed-by",
			child: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels:\n    app.kubernetes.io/managed-by: helm\n",
			want:  "a.yaml:1 (document 1) ConfigMap cm: label app.kubernetes.io/managed-by is reserved for Loom and must not be set by a template",
		},
		{
			name:  "template sets loom.dev/owner",
			child: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    loom.dev/owner: v1/ConfigMap/default/x/uid\n",
			want:  "a.yaml:1 (document 1) ConfigMap cm: annotation loom.dev/owner is reserved for Loom and must not be set by a template",
		},
		{
			name:  "unknown delete policy",
			child: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    loom.dev/delete-policy: keep\n",
			want:  `a.yaml:1 (document 1) ConfigMap cm: annotation loom.dev/delete-policy is "keep"; it must be "orphan" or "delete"`,
		},
		{
			name:  "drift mode with a typo, on its line",
			child: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    loom.dev/drift-ignore: data.a\n    loom.dev/drift: wran\ndata:\n  a: b\n",
			want:  `a.yaml:7 (document 1) ConfigMap cm: annotation loom.dev/drift is "wran"; it must be one of repair, warn (did you mean "warn"?)`,
		},
		{
			name:  "drift-ignore path the template does not set, on its line",
			child: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    loom.dev/drift-ignore: data.aa\ndata:\n  a: b\n",
			want:  `a.yaml:6 (document 1) ConfigMap cm: annotation loom.dev/drift-ignore: "data.aa" names no field the template sets (did you mean "data.a"?)`,
		},
		{
			name:  "second document located",
			child: configMap("ok", "  a: b\n") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: other\n",
			want:  `a.yaml:8 (document 2) ConfigMap cm: metadata.namespace is "other", but children must live in their parent's namespace "default"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := loadSet(t, map[string]string{"a.yaml": tt.child})
			got := renderErr(t, s, app(t, ""))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestIsClusterScoped checks the built-in table by kind and group.
func TestIsClusterScoped(t *testing.T) {
	tests := []struct {
		apiVersion, kind string
		want             bool
	}{
		{"v1", "Namespace", true},
		{"v1", "PersistentVolume", true},
		{"rbac.authorization.k8s.io/v1", "ClusterRole", true},
		{"apiextensions.k8s.io/v1", "CustomResourceDefinition", true},
		{"v1", "ConfigMap", false},
		{"rbac.authorization.k8s.io/v1", "Role", false},
		{"example.com/v1", "ClusterRole", false},
		{"apps/v1", "Namespace", false},
	}
	for _, tt := range tests {
		t.Run(tt.apiVersion+"/"+tt.kind, func(t *testing.T) {
			if got := IsClusterScoped(tt.apiVersion, tt.kind); got != tt.want {
				t.Errorf("IsClusterScoped(%q, %q) = %v, want %v", tt.apiVersion, tt.kind, got, tt.want)
			}
		})
	}
}

// TestCustomClusterRoleNamespaced checks that a custom kind that happens to
// share a built-in cluster-scoped kind's name is treated as namespaced.
func TestCustomClusterRoleNamespaced(t *testing.T) {
	s := loadSet(t, map[string]string{"a.yaml": "apiVersion: example.com/v1\nkind: ClusterRole\nmetadata:\n  name: mine\n"})
	got := mustRender(t, s, app(t, ""))
	if len(got) != 1 {
		t.Fatalf("rendered %v, want one ClusterRole", names(got))
	}
	if ns := got[0].GetNamespace(); ns != "default" {
		t.Errorf("namespace = %q, want default", ns)
	}
}

// What Render injects is what object.IsChildOf and object.ChildSelector
// recognise, and nothing else passes object.IsChildOf.
func TestIsChildOf(t *testing.T) {
	s := loadSet(t, map[string]string{"cm.yaml": configMap("cm", "  a: b\n")})
	parent := app(t, "")
	child := mustRender(t, s, parent)[0]
	if sel := object.ChildSelector(parent); sel != object.LabelPartOf+"="+child.GetLabels()[object.LabelPartOf] {
		t.Errorf("ChildSelector = %q does not select the rendered child (labels %v)", sel, child.GetLabels())
	}
	other := parent.DeepCopy()
	other.SetUID("u2")
	renamed := parent.DeepCopy()
	renamed.SetName("other")
	relabelled := child.DeepCopy()
	relabelled.SetLabels(map[string]string{object.LabelPartOf: "applyset-someone-else-v1"})
	orphan := child.DeepCopy()
	orphan.SetOwnerReferences(nil)
	tests := []struct {
		name        string
		obj, parent *unstructured.Unstructured
		want        bool
	}{
		{"a rendered child", child, parent, true},
		{"another object of the same name (another UID)", child, other, false},
		{"another parent", child, renamed, false},
		{"another ApplySet's label", relabelled, parent, false},
		{"no controller ownerReference", orphan, parent, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := object.IsChildOf(tt.obj, tt.parent); got != tt.want {
				t.Errorf("IsChildOf = %v, want %v", got, tt.want)
			}
		})
	}
}

// clusterSetConfig is the loom.yaml of a set that declares ClusterRole
// cluster-scoped.
const clusterSetConfig = testConfig + `clusterScoped:
- {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole}
- {apiVersion: example.com/v1, kind: Tenant}
`

// TestInjectDeclaredClusterScoped checks the marks a cluster-scoped child
// of a namespaced parent gets when its set declares the kind: no
// namespace, no ownerReference, loom.dev/owner naming the parent, and
// Loom's labels.
func TestInjectDeclaredClusterScoped(t *testing.T) {
	tests := []struct {
		name, child string
	}{
		{"built-in kind", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: reader\nrules: []\n"},
		{"custom kind render cannot know", "apiVersion: example.com/v1\nkind: Tenant\nmetadata:\n  name: reader\n"},
		{"another version of a declared kind", "apiVersion: rbac.authorization.k8s.io/v1beta1\nkind: ClusterRole\nmetadata:\n  name: reader\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := loadSet(t, map[string]string{"loom.yaml": clusterSetConfig, "c.yaml": tt.child})
			got := mustRender(t, s, app(t, ""))
			if len(got) != 1 {
				t.Fatalf("rendered %v, want one object", names(got))
			}
			c := got[0]
			if _, ok := c.Object["metadata"].(map[string]any)["namespace"]; ok {
				t.Errorf("metadata.namespace = %q, want none", c.GetNamespace())
			}
			if refs := c.GetOwnerReferences(); len(refs) != 0 {
				t.Errorf("ownerReferences = %+v, want none (a namespaced owner cannot reach a cluster-scoped object)", refs)
			}
			if got, want := c.GetAnnotations()[object.AnnotationOwner], "example.com/v1/App/default/web/uid-1"; got != want {
				t.Errorf("annotation %s = %q, want %q", object.AnnotationOwner, got, want)
			}
			if got := c.GetLabels()[object.LabelPartOf]; got != webAppSetID {
				t.Errorf("label %s = %q, want %q", object.LabelPartOf, got, webAppSetID)
			}
			if !object.IsChildOf(c, app(t, "")) {
				t.Errorf("IsChildOf(child, parent) = false, want true")
			}
			other := app(t, "")
			other.SetUID("uid-2")
			if object.IsChildOf(c, other) {
				t.Errorf("IsChildOf(child, another parent of the same name) = true, want false")
			}
		})
	}
	t.Run("namespace set by the template", func(t *testing.T) {
		s := loadSet(t, map[string]string{"loom.yaml": clusterSetConfig,
			"c.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: reader\n  namespace: default\n"})
		want := `c.yaml:1 (document 1) ClusterRole reader: metadata.namespace is "default", but loom.yaml's clusterScoped declares ClusterRole.rbac.authorization.k8s.io cluster-scoped`
		if diff := cmp.Diff(want, renderErr(t, s, app(t, ""))); diff != "" {
			t.Errorf("error mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("undeclared kind still refused", func(t *testing.T) {
		s := loadSet(t, map[string]string{"loom.yaml": clusterSetConfig,
			"c.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: reader\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: reader}\n"})
		if got := renderErr(t, s, app(t, "")); !strings.Contains(got, "ClusterRoleBinding.rbac.authorization.k8s.io is cluster-scoped: a namespaced parent cannot own it unless") {
			t.Errorf("error = %s, want the undeclared kind refused", got)
		}
	})
}
