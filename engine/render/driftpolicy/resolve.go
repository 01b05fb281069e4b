package driftpolicy

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/internal/suggest"
)

// Resolve checks obj's drift annotations and adds the set's defaults from
// cfg (nil: none): drift.mode when the child names no mode of its own, and
// the paths of each drift.ignore entry that matches the child and that it
// sets. On error it also returns the text of the annotation at fault, for
// the caller to find its line.
//
// A path of the child's own drift-ignore annotation must name a field the
// child sets (a typo would otherwise ignore nothing, silently); an
// entry of loom.yaml, which names paths for a whole kind, adds only the
// paths the child sets.
func Resolve(obj map[string]any, cfg *config.Drift) (annotation string, err error) {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if ann[object.AnnotationManage] == object.ManagePatch {
		return patchChild(ann)
	}
	if v, ok := ann[object.AnnotationDrift]; ok {
		s, _ := v.(string)
		if err := object.CheckDrift(s); err != nil {
			// The key and its colon: not the line of drift-ignore.
			return object.AnnotationDrift + ":", fmt.Errorf("annotation %w", err)
		}
	} else if cfg != nil && cfg.Mode != "" && cfg.Mode != object.DriftRepair {
		ann = annotations(meta, ann)
		ann[object.AnnotationDrift] = cfg.Mode
	}
	var own []string
	if v, ok := ann[object.AnnotationDriftIgnore]; ok {
		s, _ := v.(string)
		own = object.DriftIgnoreOf(map[string]string{object.AnnotationDriftIgnore: s})
		if len(own) == 0 {
			return object.AnnotationDriftIgnore, fmt.Errorf("annotation %s names no field path; list them comma-separated, such as spec.replicas", object.AnnotationDriftIgnore)
		}
		for _, p := range own {
			if err := checkPath(obj, p); err != nil {
				return object.AnnotationDriftIgnore, fmt.Errorf("annotation %s: %w", object.AnnotationDriftIgnore, err)
			}
		}
	}
	added := fromConfig(obj, cfg, own)
	if len(added) > 0 {
		ann = annotations(meta, ann)
		ann[object.AnnotationDriftIgnore] = strings.Join(append(own, added...), ", ")
	}
	return "", nil
}

// annotations returns meta's annotations, making them when there are none.
func annotations(meta, ann map[string]any) map[string]any {
	if ann == nil {
		ann = map[string]any{}
		meta["annotations"] = ann
	}
	return ann
}

// checkPath returns an error unless p is a field path that obj sets,
// suggesting the nearest path obj sets.
func checkPath(obj map[string]any, p string) error {
	names, err := object.ParseFieldPath(p)
	if err != nil {
		return err
	}
	if sets(obj, names) {
		return nil
	}
	msg := fmt.Sprintf("%q names no field the template sets", p)
	if s := suggest.Nearest(p, fieldPaths(obj)); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return fmt.Errorf("%s", msg)
}

// fromConfig returns the paths of cfg's ignore entries that match obj and
// that obj sets, less those in own, in the order given.
func fromConfig(obj map[string]any, cfg *config.Drift, own []string) []string {
	if cfg == nil {
		return nil
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	var out []string
	for _, ig := range cfg.Ignore {
		if ig.Kind != kind || (ig.APIVersion != "" && ig.APIVersion != apiVersion) || (ig.Name != "" && ig.Name != name) {
			continue
		}
		for _, p := range ig.Paths {
			names, err := object.ParseFieldPath(p)
			if err != nil || !sets(obj, names) || slices.Contains(own, p) || slices.Contains(out, p) {
				continue
			}
			out = append(out, p)
		}
	}
	return out
}

// sets reports whether obj has a value at names.
func sets(obj map[string]any, names []string) bool {
	var cur any = obj
	for _, n := range names {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[n]; !ok {
			return false
		}
	}
	return true
}

// fieldPaths lists the paths of every map field of obj, for suggestions.
func fieldPaths(obj map[string]any) []string {
	var out []string
	var walk func(prefix []string, m map[string]any)
	walk = func(prefix []string, m map[string]any) {
		for k, v := range m {
			p := append(slices.Clone(prefix), k)
			out = append(out, object.FormatFieldPath(p))
			if sub, ok := v.(map[string]any); ok {
				walk(p, sub)
			}
		}
	}
	walk(nil, obj)
	sort.Strings(out)
	return out
}

// patchChild checks a patch child's drift annotations: Loom always takes
// back the few fields it sets in someone else's object (repair), so warn
// and ignore paths, which are not built for patch children, are refused
// rather than silently not followed, and the set's defaults do not apply.
func patchChild(ann map[string]any) (annotation string, err error) {
	if v, ok := ann[object.AnnotationDrift]; ok && v != object.DriftRepair {
		return object.AnnotationDrift + ":", fmt.Errorf("annotation %s is %v, but a patch child's fields are always taken back (%s): %s and %s are not built for patch children",
			object.AnnotationDrift, v, object.DriftRepair, object.DriftWarn, object.AnnotationDriftIgnore)
	}
	if _, ok := ann[object.AnnotationDriftIgnore]; ok {
		return object.AnnotationDriftIgnore, fmt.Errorf("annotation %s: a patch child's fields are always taken back (%s): %s and %s are not built for patch children",
			object.AnnotationDriftIgnore, object.DriftRepair, object.DriftWarn, object.AnnotationDriftIgnore)
	}
	return "", nil
}
