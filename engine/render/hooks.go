package render

import (
	"slices"
	"sort"
	"strconv"

	"github.com/loom-operator/loom/engine/hook"
	"github.com/loom-operator/loom/engine/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// Helm's hook annotations.
const (
	// HookWeightAnnotation orders hooks of one phase: lower first.
	HookWeightAnnotation = "helm.sh/hook-weight"
)

// Hook is one of a chart's hooks that a render kept, for the controller
// to run (hook.Decide).
type Hook struct {
	// Ref names the hook's object.
	Ref object.Ref
	// Key is Ref as the parent's status.release names it.
	Key hook.Key
	// Policies are its helm.sh/hook-delete-policy values, as given.
	Policies []helmrelease.HookDeletePolicy
	// Done is true for a hook the parent's status.release says is done
	// in this revision: it is not among the children, and nothing waits
	// for it.
	Done bool
}

// HookKey is obj's name in a hook.Record.
func HookKey(ref object.Ref) hook.Key {
	return hook.Key{Group: ref.GroupKind.Group, Kind: ref.GroupKind.Kind, Namespace: ref.Namespace, Name: ref.Name}
}

// orderHooks drops the chart objects Loom does not apply in this release
// (test, delete and rollback hooks; install hooks on an upgrade and
// upgrade hooks on the install; hooks the parent's status.release says
// are done in this revision), stamps the others with the release's
// revision (hook.AnnotationRevision), and makes them wait as Helm's hooks
// run: each child reads, through the lookup machinery, the hooks it must
// wait for (pre hooks of a lower weight for a pre hook; every pre hook
// for an ordinary child; every ordinary child, pre hook and post hook of
// a lower weight for a post hook), so that the dependency stage holds it
// until they are ready, and the controller watches them.
func orderHooks(st *lookupState, kids []renderedChild, rel hook.Release, parent *unstructured.Unstructured) ([]renderedChild, []Hook, error) {
	type hooked struct {
		stage  hook.Stage
		weight int
	}
	status, _ := parent.Object["status"].(map[string]any)
	rec, _ := hook.RecordOf(status) // checked by release
	rec = hook.Start(rec, rel)
	revision := strconv.FormatInt(rel.Revision, 10)
	out := kids[:0:0]
	var keep []hooked
	var isHook []bool
	var hooks []Hook
	for _, k := range kids {
		h := hook.SpecOf(k.obj.Object)
		if h == nil {
			out = append(out, k)
			keep = append(keep, hooked{hook.NotHook, 0})
			isHook = append(isHook, false)
			continue
		}
		ref := object.RefOf(k.obj)
		p := h.Stage()
		if p == hook.NeverHook || !hook.Runs(h.Events, rel) {
			continue
		}
		if rec.Phase(HookKey(ref)).Done() {
			// Not a child any more; the controller still follows its
			// delete policy.
			hooks = append(hooks, Hook{Ref: ref, Key: HookKey(ref), Policies: h.DeletePolicies, Done: true})
			continue
		}
		ann := k.obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[hook.AnnotationRevision] = revision
		k.obj.SetAnnotations(ann)
		out = append(out, k)
		keep = append(keep, hooked{p, h.Weight})
		isHook = append(isHook, true)
		hooks = append(hooks, Hook{Ref: ref, Key: HookKey(ref), Policies: h.DeletePolicies})
	}
	if !slices.ContainsFunc(hooks, func(h Hook) bool { return !h.Done }) {
		return out, hooks, nil
	}
	waitsFor := func(a, b hooked) bool { // does a wait for b?
		switch a.stage {
		case hook.PreHook:
			return b.stage == hook.PreHook && b.weight < a.weight
		case hook.NotHook:
			return b.stage == hook.PreHook
		case hook.PostHook:
			return b.stage != hook.PostHook || b.weight < a.weight
		}
		return false
	}
	// Read each awaited object once, in a fixed order.
	order := make([]int, len(out))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return keep[order[i]].weight < keep[order[j]].weight })
	reads := map[int]Read{}
	for i := range out {
		for _, j := range order {
			if j == i || !waitsFor(keep[i], keep[j]) {
				continue
			}
			rd, ok := reads[j]
			if !ok {
				o := out[j].obj
				st.file = ""
				if _, err := st.lookup(0, o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), o.GetName()); err != nil {
					return nil, nil, err
				}
				rd = st.reads[len(st.reads)-1]
				if ran := annotation(rd.Object, hook.AnnotationRevision); isHook[j] && rd.Object != nil && ran != revision && (ran != "" || st.parentUID != "") {
					// An older run of the hook (a fixed-name Job that
					// completed on the last revision) is not this one:
					// what waits for the hook waits for this revision's.
					// Offline (a parent never stored, loom test), an
					// object of the lookups file without the mark stands
					// for this revision's run.
					rd.Object = nil
					st.reads[len(st.reads)-1] = rd
				}
				reads[j] = rd
			}
			out[i].reads = append(out[i].reads, rd)
		}
	}
	return out, hooks, nil
}

// annotation is an annotation of an object's map.
func annotation(obj map[string]any, key string) string {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	s, _ := ann[key].(string)
	return s
}
