package modes

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/object"
)

// Of checks a rendered child's loom.dev/manage annotation and returns its
// mode, setDefault (loom.yaml's manage, checked with it) when it has
// none. A child whose mode is not full gets it in its annotation.
func Of(obj map[string]any, setDefault string) (string, error) {
	return of(obj, setDefault)
}

func of(obj map[string]any, setDefault string) (string, error) {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if v, ok := ann[object.AnnotationManage]; ok {
		s, _ := v.(string)
		if err := object.CheckManage(s); err != nil {
			return "", err
		}
		return s, nil
	}
	mode := object.ManageOf(nil, setDefault)
	if mode != object.ManageFull {
		if ann == nil {
			ann = map[string]any{}
			meta["annotations"] = ann
		}
		ann[object.AnnotationManage] = mode
	}
	return mode, nil
}

// allowedObserved are the fields an observed child's template may set,
// besides metadata.annotations of Loom's prefix.
var allowedObserved = []string{"apiVersion", "kind", "metadata", "metadata.name", "metadata.namespace", "metadata.annotations"}

// fieldsText names the fields an observed child may set, for errors.
const fieldsText = "apiVersion, kind, metadata.name, metadata.namespace and loom.dev/ annotations"

// ObservedFieldsError is an observed child whose template sets a field
// Loom would never apply.
type ObservedFieldsError struct {
	// Field is the first such field, as a path (data, metadata.labels).
	Field string
}

func (e *ObservedFieldsError) Error() string {
	return fmt.Sprintf("%s is %s, so Loom never writes this child: its template may set %s only, not %s",
		object.AnnotationManage, object.ManageObserve, fieldsText, e.Field)
}

// Observed checks an observed child and binds it as a lookup is bound:
// its template names it and nothing more; its kind must be declared in
// loom.yaml's lookups (Loom reads it as one); a namespaced one is in
// parentNS (which it gets when it names none) or a namespace declared
// for its kind. clusterScoped says whether the kind is.
func Observed(obj map[string]any, rules []config.LookupRule, parentNS string, clusterScoped bool) error {
	if f := extraField(obj); f != "" {
		return &ObservedFieldsError{Field: f}
	}
	if meta, _ := obj["metadata"].(map[string]any); meta != nil {
		if ann, _ := meta["annotations"].(map[string]any); ann[object.AnnotationCluster] != nil {
			return fmt.Errorf("%s is %s: Loom reads observed children in the cluster it runs in, not in a workload cluster (%s)",
				object.AnnotationManage, object.ManageObserve, object.AnnotationCluster)
		}
	}
	return bind(obj, obj["metadata"].(map[string]any), rules, parentNS, clusterScoped, object.ManageObserve)
}

// extraField returns the first field (sorted) that an observed child's
// template sets beyond its name, or "".
func extraField(obj map[string]any) string {
	var extra []string
	for k := range obj {
		if !slices.Contains(allowedObserved, k) {
			extra = append(extra, k)
		}
	}
	meta, _ := obj["metadata"].(map[string]any)
	for k := range meta {
		if !slices.Contains(allowedObserved, "metadata."+k) {
			extra = append(extra, "metadata."+k)
		}
	}
	ann, _ := meta["annotations"].(map[string]any)
	for k := range ann {
		if !strings.HasPrefix(k, "loom.dev/") {
			extra = append(extra, "metadata.annotations."+k)
		}
	}
	if len(extra) == 0 {
		return ""
	}
	sort.Strings(extra)
	return extra[0]
}
