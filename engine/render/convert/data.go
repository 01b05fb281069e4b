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
// holds two partial objects of that version (spec and status only):
// "fields", the fields to put back when the parent is next converted to
// it (a null removes the field there: the way through made it up), and
// "trip", what the conversion gave at those paths when they were kept
// (absent where it gave nothing). A field is put back only where the
// conversion still gives what "trip" says: an edit made in the other
// version in between, which changes what the conversion gives there,
// wins over the kept value.

// kept is the conversion data of one version.
type kept struct {
	Fields map[string]any `json:"fields"`
	Trip   map[string]any `json:"trip,omitempty"`
}

// readData returns obj's conversion data (empty when it has none).
func readData(obj map[string]any) (map[string]kept, error) {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	raw, ok := ann[DataAnnotation].(string)
	if !ok || raw == "" {
		return map[string]kept{}, nil
	}
	data := map[string]kept{}
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
func writeData(obj map[string]any, data map[string]kept) error {
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
// by field; anything else, whole. It also returns got's values at the
// same paths (absent where got has none), for restore to check.
func diff(want, got map[string]any) (fields, trip map[string]any) {
	fields, trip = map[string]any{}, map[string]any{}
	for k, w := range want {
		g, ok := got[k]
		wm, wok := w.(map[string]any)
		gm, gok := g.(map[string]any)
		switch {
		case ok && wok && gok:
			if f, t := diff(wm, gm); len(f) > 0 {
				fields[k], trip[k] = f, t
			}
		case !ok:
			fields[k] = runtime.DeepCopyJSONValue(w)
		case !equality.Semantic.DeepEqual(w, g):
			fields[k], trip[k] = runtime.DeepCopyJSONValue(w), runtime.DeepCopyJSONValue(g)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			fields[k], trip[k] = nil, runtime.DeepCopyJSONValue(g)
		}
	}
	return fields, trip
}

// restore puts fields, a partial object from diff, onto obj, where obj
// still holds what trip says it held when they were kept (an object of
// both is walked field by field).
func restore(obj, fields, trip map[string]any) {
	for k, v := range fields {
		t, had := trip[k]
		vm, vok := v.(map[string]any)
		tm, tok := t.(map[string]any)
		cur, has := obj[k]
		if vok && tok { // an object on both sides, when kept
			if om, ok := cur.(map[string]any); ok {
				restore(om, vm, tm)
			}
			continue
		}
		if has != (had && t != nil) || has && !equality.Semantic.DeepEqual(cur, t) {
			continue // edited since: the edit wins
		}
		switch {
		case v == nil:
			delete(obj, k)
		case vok:
			obj[k] = runtime.DeepCopyJSONValue(dropNulls(vm))
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
	if d, _ := diff(am, bm); len(d) > 0 {
		return fmt.Errorf("the conversion changed metadata (%s), which the API server refuses", strings.Join(paths("metadata", d), ", "))
	}
	return nil
}
