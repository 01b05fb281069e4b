package object

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

func TestCheckDeletePolicy(t *testing.T) {
	tests := []struct {
		value   string
		wantErr bool
	}{
		{"orphan", false},
		{"delete", false},
		{"Orphan", true}, // exact, as the API server's enums are
		{"keep", true},   // Helm's word: refused, not taken as a keep
		{"", true},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			if err := CheckDeletePolicy(tt.value); (err != nil) != tt.wantErr {
				t.Errorf("CheckDeletePolicy(%q) = %v, want error %v", tt.value, err, tt.wantErr)
			}
		})
	}
}

func TestIsOrphan(t *testing.T) {
	tests := []struct {
		name string
		ann  map[string]string
		want bool
	}{
		{"orphan", map[string]string{AnnotationDeletePolicy: "orphan"}, true},
		{"delete", map[string]string{AnnotationDeletePolicy: "delete"}, false},
		{"none", nil, false},
		{"Helm's keep is not Loom's", map[string]string{"helm.sh/resource-policy": "keep"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsOrphan(tt.ann); got != tt.want {
				t.Errorf("IsOrphan(%v) = %v, want %v", tt.ann, got, tt.want)
			}
		})
	}
}

func TestGroupKindsRoundTrip(t *testing.T) {
	in := []schema.GroupKind{
		{Kind: "PersistentVolumeClaim"}, {Group: "apps", Kind: "Deployment"},
		{Kind: "PersistentVolumeClaim"}, {Group: "cert-manager.io", Kind: "Certificate"},
	}
	s := FormatGroupKinds(in)
	if want := "Certificate.cert-manager.io,Deployment.apps,PersistentVolumeClaim"; s != want {
		t.Errorf("FormatGroupKinds() = %q, want %q", s, want)
	}
	want := []schema.GroupKind{{Group: "cert-manager.io", Kind: "Certificate"}, {Group: "apps", Kind: "Deployment"}, {Kind: "PersistentVolumeClaim"}}
	if diff := cmp.Diff(want, ParseGroupKinds(s)); diff != "" {
		t.Errorf("ParseGroupKinds (-want +got):\n%s", diff)
	}
	if got := ParseGroupKinds(""); len(got) != 0 {
		t.Errorf("ParseGroupKinds(\"\") = %v, want none", got)
	}
}

// TestAddNamespaceOwner checks the second owner a child to keep gets: its
// Namespace, not as controller, once.
func TestAddNamespaceOwner(t *testing.T) {
	parentRef := `{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: p1, controller: true, blockOwnerDeletion: true}`
	nsRef := `{apiVersion: v1, kind: Namespace, name: ns, uid: n1}`
	tests := []struct{ name, obj, want string }{
		{name: "added after the parent",
			obj:  `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns, ownerReferences: [` + parentRef + `]}}`,
			want: `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns, ownerReferences: [` + parentRef + `, ` + nsRef + `]}}`},
		{name: "once",
			obj:  `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns, ownerReferences: [` + parentRef + `, ` + nsRef + `]}}`,
			want: `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns, ownerReferences: [` + parentRef + `, ` + nsRef + `]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := fromYAMLTest(t, tt.obj)
			AddNamespaceOwner(obj, "n1")
			if diff := cmp.Diff(fromYAMLTest(t, tt.want).Object, obj.Object); diff != "" {
				t.Errorf("object (-want +got):\n%s", diff)
			}
		})
	}
}

func fromYAMLTest(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}
