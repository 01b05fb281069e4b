package apply

import (
	"testing"

	"github.com/loom-operator/loom/internal/fixture"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestHashIsStableAndSensitive(t *testing.T) {
	a := fixture.Object(t, fixture.Deployment)
	b := fixture.Object(t, fixture.Deployment)
	ha, err := Hash(a)
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := Hash(b)
	if ha != hb || len(ha) != 16 {
		t.Fatalf("hashes of equal objects: %q, %q", ha, hb)
	}
	b.Object["spec"].(map[string]any)["replicas"] = int64(3)
	if hc, _ := Hash(b); hc == ha {
		t.Fatal("hash did not change with the object")
	}
	if got := withHash(a, ha).GetAnnotations()[AnnotationApplied]; got != ha {
		t.Fatalf("annotation = %q", got)
	}
	if a.GetAnnotations() != nil {
		t.Fatal("withHash mutated its input")
	}
}

func TestPrepareSecretStringData(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"stringData becomes data",
			`{apiVersion: v1, kind: Secret, metadata: {name: s}, stringData: {user: admin}}`,
			`{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {user: YWRtaW4=}}`},
		{"stringData wins over data for the same key, as on the server",
			`{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {user: b2xk, other: eA==}, stringData: {user: admin}}`,
			`{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {user: YWRtaW4=, other: eA==}}`},
		{"a Secret with data only is left alone",
			`{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {user: YWRtaW4=}}`,
			`{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {user: YWRtaW4=}}`},
		{"a non-string value is left for the server to reject",
			`{apiVersion: v1, kind: Secret, metadata: {name: s}, stringData: {n: 1}}`,
			`{apiVersion: v1, kind: Secret, metadata: {name: s}, stringData: {n: 1}}`},
		{"another group's Secret kind is not touched",
			`{apiVersion: example.com/v1, kind: Secret, metadata: {name: s}, stringData: {user: admin}}`,
			`{apiVersion: example.com/v1, kind: Secret, metadata: {name: s}, stringData: {user: admin}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := fixture.Object(t, tt.in)
			orig := in.DeepCopy()
			got := prepare(in)
			want := fixture.Object(t, tt.want)
			if !equalObjects(got, want) {
				t.Errorf("prepare = %v, want %v", got.Object, want.Object)
			}
			if !equalObjects(in, orig) {
				t.Error("prepare mutated its input")
			}
		})
	}
}

func equalObjects(a, b *unstructured.Unstructured) bool {
	ha, err1 := Hash(a)
	hb, err2 := Hash(b)
	return err1 == nil && err2 == nil && ha == hb
}
