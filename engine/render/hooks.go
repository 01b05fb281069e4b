package render

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/loom-operator/loom/engine/hook"
	"github.com/loom-operator/loom/engine/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
)

// Helm's hook annotations.
const (
	// HookWeightAnnotation orders hooks of one phase: lower first.
	HookWeightAnnotation = "helm.sh/hook-weight"
)

// hookPhase is when Loom applies a chart's object, from its hook
// annotation.
type hookPhase int

const (
	// notHook is an ordinary child.
	notHook hookPhase = iota
	// preHook (pre-install, pre-upgrade) is applied first: every other
	// child waits until it is ready (a Job: complete).
	preHook
	// postHook (post-install, post-upgrade) waits until every ordinary
	// child and pre hook is ready.
	postHook
	// neverHook (test; pre/post-delete and -rollback only) is never
	// applied: Loom has no such event.
	neverHook
)

// hookOf is the phase and weight of a chart object, as Helm 4 reads its
// hook annotations (see helmHookOf).
func hookOf(obj map[string]any) (hookPhase, int) {
	h := helmHookOf(obj)
	if h == nil {
		return notHook, 0
	}
	return h.phase(), h.Weight
}

// hookSpec is a chart object's hook as Helm 4 parses it; unknown is true
// for a hook with a type Helm does not know, which Helm skips whole.
type hookSpec struct {
	helmrelease.Hook
	unknown bool
}

// phase is when Loom applies the hook.
func (h *hookSpec) phase() hookPhase {
	if h.unknown {
		return neverHook
	}
	phase := neverHook
	for _, e := range h.Events {
		switch e {
		case helmrelease.HookTest:
			return neverHook
		case helmrelease.HookPreInstall, helmrelease.HookPreUpgrade:
			phase = preHook
		case helmrelease.HookPostInstall, helmrelease.HookPostUpgrade:
			if phase != preHook {
				phase = postHook
			}
		}
	}
	return phase
}

// helmHookOf is obj's hook as Helm 4's own parser (releaseutil.
// SortManifests) reads its annotations, or nil for an object that is not
// a hook. Parses are kept by annotation values (hookSpecs), so that Helm
// logs an unknown hook type once, not on every render.
func helmHookOf(obj map[string]any) *hookSpec {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	hooks, ok := ann[helmrelease.HookAnnotation].(string)
	if !ok {
		return nil
	}
	in := map[string]any{helmrelease.HookAnnotation: hooks}
	for _, k := range []string{helmrelease.HookWeightAnnotation, helmrelease.HookDeleteAnnotation} {
		if v, ok := ann[k].(string); ok {
			in[k] = v
		}
	}
	key := hooks + "\x00" + stringOr(in[helmrelease.HookWeightAnnotation]) + "\x00" + stringOr(in[helmrelease.HookDeleteAnnotation])
	if h, ok := hookSpecs.get(key); ok {
		return h
	}
	h := parseHelmHook(in)
	hookSpecs.put(key, h)
	return h
}

// parseHelmHook runs Helm's manifest sorter over a Job that carries only
// the hook annotations ann.
func parseHelmHook(ann map[string]any) *hookSpec {
	doc, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "hook", "annotations": ann}})
	if err != nil { // strings only: cannot fail
		return &hookSpec{unknown: true}
	}
	hooks, manifests, err := releaseutil.SortManifests(map[string]string{"hook.yaml": string(doc)}, nil, releaseutil.InstallOrder)
	switch {
	case err != nil || len(hooks) > 1:
		return &hookSpec{unknown: true}
	case len(hooks) == 1:
		return &hookSpec{Hook: *hooks[0]}
	case len(manifests) == 1:
		return nil
	}
	return &hookSpec{unknown: true}
}

// hookSpecCache keeps parsed hooks by their annotation values, up to a
// number of entries and of bytes (the values come from charts, and may
// come from a parent's spec).
type hookSpecCache struct {
	mu    sync.Mutex
	m     map[string]*hookSpec
	bytes int
}

// Bounds of hookSpecs.
const (
	maxHookSpecs      = 1024
	maxHookSpecsBytes = 256 << 10
)

var hookSpecs = &hookSpecCache{m: map[string]*hookSpec{}}

func (c *hookSpecCache) get(key string) (*hookSpec, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.m[key]
	return h, ok
}

func (c *hookSpecCache) put(key string, h *hookSpec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxHookSpecs || c.bytes+len(key) > maxHookSpecsBytes {
		return
	}
	c.m[key] = h
	c.bytes += len(key)
}

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
		phase  hookPhase
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
		h := helmHookOf(k.obj.Object)
		if h == nil {
			out = append(out, k)
			keep = append(keep, hooked{notHook, 0})
			isHook = append(isHook, false)
			continue
		}
		ref := object.RefOf(k.obj)
		p := h.phase()
		if p == neverHook || !hook.Runs(h.Events, rel) {
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
		switch a.phase {
		case preHook:
			return b.phase == preHook && b.weight < a.weight
		case notHook:
			return b.phase == preHook
		case postHook:
			return b.phase != postHook || b.weight < a.weight
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

func stringOr(v any) string {
	s, _ := v.(string)
	return s
}

// annotation is an annotation of an object's map.
func annotation(obj map[string]any, key string) string {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	return stringOr(ann[key])
}
