package pack

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// OwnEntry returns the managedFields entry that records the fields a
// server-side apply by manager owns in obj (not its status), or nil.
//
// This entry is what makes Loom's "nothing changed" decision exact. The API
// server moves a field out of it whenever another writer changes or
// removes that field: an Update or Patch by any client takes the fields it
// modifies, adds or removes from every other manager, and a forced apply
// by another manager takes the fields it sets. So while the entry is the
// one Loom's own last apply produced, every field Loom sets still holds
// the value Loom applied.
func OwnEntry(obj *unstructured.Unstructured, manager string) map[string]any {
	md, _ := obj.Object["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any) // not NestedSlice: it copies every entry
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok || m["manager"] != manager || m["operation"] != "Apply" {
			continue
		}
		if sub, _ := m["subresource"].(string); sub != "" {
			continue
		}
		return m
	}
	return nil
}

// Fingerprint is a short digest of the fields manager owns in obj through
// server-side apply (its managedFields entry, without the timestamp), or
// "" when it owns none. Two objects with the same fingerprint have the same
// fields owned by manager, at the same version. A slimmed object (Slim)
// carries the fingerprint it was computed from.
func Fingerprint(obj *unstructured.Unstructured, manager string) string {
	if fp, ok := obj.Object[fieldsKey].(string); ok {
		return fp
	}
	e := OwnEntry(obj, manager)
	if e == nil {
		return ""
	}
	return fingerprint(asString(e["apiVersion"]), e["fieldsV1"])
}

// fingerprint digests an entry's apiVersion and its decoded fieldsV1.
func fingerprint(apiVersion string, fields any) string {
	b, err := json.Marshal(fields) // sorted keys: the same set gives the same bytes
	if err != nil {
		return ""
	}
	return fingerprintBytes(apiVersion, b)
}

// fingerprintBytes digests an entry's apiVersion and its fieldsV1 as
// json.Marshal writes it decoded.
func fingerprintBytes(apiVersion string, b []byte) string {
	h := sha256.New()
	h.Write([]byte(apiVersion))
	h.Write([]byte{0})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}
