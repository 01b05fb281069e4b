package childcache

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/pack"
	"github.com/loom-operator/loom/engine/shard"
)

// u decodes a YAML fixture into an unstructured object.
func u(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{}
	if err := json.Unmarshal(j, &obj); err != nil { // numbers as int64, like the API server's
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// packChild packs u as Loom's child informers hold it: from its JSON, by
// the packer the packed client decodes children with.
func packChild(t testing.TB, u *unstructured.Unstructured) *pack.Packed {
	t.Helper()
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	p, err := packwatch.Child("loom")(b)
	if err != nil {
		t.Fatalf("pack %s: %v", b, err)
	}
	return p
}

// uidOutside returns a parent UID whose bucket is not in s.
func uidOutside(t *testing.T, s shard.Set) types.UID {
	t.Helper()
	for i := range 10000 {
		if uid := types.UID(fmt.Sprintf("parent-%d", i)); !shard.Matches(s, uid) {
			return uid
		}
	}
	t.Fatalf("no UID outside %s", s)
	return ""
}
