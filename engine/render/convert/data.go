package convert

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// The conversion data is a JSON object keyed by version name. Each value
// is a partial object of that version (spec and status only): the fields
// to put back when the parent is next converted to it. A null removes the
// field there: the way through made it up.

// readData returns obj's conversion data (empty when it has none).
func readData(obj map[string]any) (map[string]any, error) {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	raw, ok := ann[DataAnnotation].(string)
	if !ok || raw == "" {
		return map[string]any{}, nil
	}
	data := map[string]any{}
	// As the API server decodes JSON: whole numbers int64.
	if err := utiljson.Unmarshal([]byte(raw), &data); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", DataAnnotation, err)
	}
	return data, nil
}

// withoutData returns a deep copy of obj without its conversion data.
func withoutData(obj map[string]any) map[string]any {
	out := runtime.DeepCopyJSON(obj)
	meta, _ := out["metadata"].(map[string]any)
	if ann, ok := meta["annotations"].(map[string]any); ok {
		if _, has := ann[DataAnnotation]; has {
			delete(ann, DataAnnotation)
			if len(ann) == 0 {
				delete(meta, "annotations")
			}
		}
	}
	return out
}

// writeData sets obj's conversion data, or removes the annotation (and
// annotations, left empty) when data is empty.
func writeData(obj map[string]any, data map[string]any) error {
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		if len(data) == 0 {
			return nil
		}
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	ann, _ := meta["annotations"].(map[string]any)
	if len(data) == 0 {
		if _, has := ann[DataAnnotation]; has {
			delete(ann, DataAnnotation)
			if len(ann) == 0 {
				delete(meta, "annotations")
			}
		}
		return nil
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("annotation %s: %w", DataAnnotation, err)
	}
	if len(raw) > MaxDataBytes {
		return fmt.Errorf("annotation %s: the fields a version cannot hold take %d bytes, more than %d", DataAnnotation, len(raw), MaxDataBytes)
	}
	if ann == nil {
		ann = map[string]any{}
		meta["annotations"] = ann
	}
	ann[DataAnnotation] = string(raw)
	return nil
}

// body is obj without apiVersion, kind and metadata: what a conversion
// converts.
func body(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "apiVersion" && k != "kind" && k != "metadata" {
			out[k] = v
		}
	}
	return out
}

// diff returns the partial object that, restored onto got, gives want:
// want's values where got differs or lacks them, and null where got has
// a field want lacks. Objects present on both sides are compared field
// by field; anything else, whole.
func diff(want, got map[string]any) map[string]any {
	out := map[string]any{}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			out[k] = runtime.DeepCopyJSONValue(w)
			continue
		}
		wm, wok := w.(map[string]any)
		gm, gok := g.(map[string]any)
		if wok && gok {
			if d := diff(wm, gm); len(d) > 0 {
				out[k] = d
			}
			continue
		}
		if !equality.Semantic.DeepEqual(w, g) {
			out[k] = runtime.DeepCopyJSONValue(w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out[k] = nil
		}
	}
	return out
}

// restore puts a partial object from diff onto obj.
func restore(obj, partial map[string]any) {
	for k, v := range partial {
		switch pv := v.(type) {
		case nil:
			delete(obj, k)
		case map[string]any:
			if om, ok := obj[k].(map[string]any); ok {
				restore(om, pv)
				continue
			}
			obj[k] = runtime.DeepCopyJSONValue(dropNulls(pv))
		default:
			obj[k] = runtime.DeepCopyJSONValue(v)
		}
	}
}

// dropNulls removes the nulls of a partial object put where obj has no
// object: there is nothing there to remove.
func dropNulls(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch pv := v.(type) {
		case nil:
		case map[string]any:
			out[k] = dropNulls(pv)
		default:
			out[k] = v
		}
	}
	return out
}

// paths lists the dotted paths of a partial object's leaves, sorted.
func paths(prefix string, partial map[string]any) []string {
	var out []string
	for k, v := range partial {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			out = append(out, paths(p, m)...)
			continue
		}
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// checkMetadata refuses a conversion that changed metadata other than
// DataAnnotation: the API server refuses it too.
func checkMetadata(in, out map[string]any) error {
	a, b := withoutData(in)["metadata"], withoutData(out)["metadata"]
	am, _ := a.(map[string]any)
	bm, _ := b.(map[string]any)
	if d := diff(am, bm); len(d) > 0 {
		return fmt.Errorf("the conversion changed metadata (%s), which the API server refuses", strings.Join(paths("metadata", d), ", "))
	}
	return nil
}
