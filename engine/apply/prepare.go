package apply

import (
	"encoding/base64"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// prepare returns desired as Loom sends it. A Secret's stringData is
// written into data, base64-encoded, because stringData is write-only: the
// API server stores it in data, while the managedFields entry of the
// writer still names stringData. Loom would then own no field that a hand
// edit of data changes, and could not see that edit. Sending data makes
// Loom own data's keys, so such an edit is seen and reverted. The stored
// Secret is the same either way (stringData wins over data for a key in
// both). Other objects are returned as they are, not copied.
func prepare(desired *unstructured.Unstructured) *unstructured.Unstructured {
	gvk := desired.GroupVersionKind()
	if gvk.Group != "" || gvk.Kind != "Secret" {
		return desired
	}
	sd, ok := desired.Object["stringData"].(map[string]any)
	if !ok {
		return desired
	}
	out := desired.DeepCopy()
	delete(out.Object, "stringData")
	data, _ := out.Object["data"].(map[string]any)
	if data == nil {
		data = make(map[string]any, len(sd))
	}
	for k, v := range sd {
		s, ok := v.(string)
		if !ok {
			return desired // not a valid Secret: let the server say so
		}
		data[k] = base64.StdEncoding.EncodeToString([]byte(s))
	}
	out.Object["data"] = data
	return out
}
