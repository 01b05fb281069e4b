package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// AnnotationApplied holds a hash of the desired object Loom last applied.
const AnnotationApplied = "loom.dev/applied"

// Hash returns a short, stable hash of a desired object.
func Hash(desired *unstructured.Unstructured) (string, error) {
	b, err := json.Marshal(desired.Object) // encoding/json sorts map keys
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// withHash returns a copy of desired that carries its hash.
func withHash(desired *unstructured.Unstructured, hash string) *unstructured.Unstructured {
	out := desired.DeepCopy()
	ann := out.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationApplied] = hash
	out.SetAnnotations(ann)
	return out
}
