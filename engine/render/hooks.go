package render

import (
	"sort"
	"strconv"
	"strings"
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

// hookOf is the phase and weight of a chart object.
func hookOf(obj map[string]any) (hookPhase, int) {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	hooks, ok := ann[HookAnnotation].(string)
	if !ok {
		return notHook, 0
	}
	weight, _ := strconv.Atoi(strings.TrimSpace(stringOr(ann[HookWeightAnnotation])))
	phase := neverHook
	for h := range strings.SplitSeq(hooks, ",") {
		switch strings.TrimSpace(h) {
		case "test", "test-success", "test-failure":
			return neverHook, weight
		case "pre-install", "pre-upgrade":
			phase = preHook
		case "post-install", "post-upgrade":
			if phase != preHook {
				phase = postHook
			}
		}
	}
	return phase, weight
}

func stringOr(v any) string {
	s, _ := v.(string)
	return s
}

// orderHooks drops the chart objects Loom never applies and makes the
// others wait as Helm's hooks run: each child reads, through the
// lookup machinery, the hooks it must wait for (pre hooks of a lower
// weight for a pre hook; every pre hook for an ordinary child; every
// ordinary child, pre hook and post hook of a lower weight for a post
// hook), so that the dependency stage holds it until they are ready, and
// the controller watches them.
func orderHooks(st *lookupState, kids []renderedChild) ([]renderedChild, error) {
	type hooked struct {
		phase  hookPhase
		weight int
	}
	info := make([]hooked, len(kids))
	out := kids[:0:0]
	var keep []hooked
	for i, k := range kids {
		p, w := hookOf(k.obj.Object)
		info[i] = hooked{p, w}
		if p != neverHook {
			out = append(out, k)
			keep = append(keep, info[i])
		}
	}
	hasHooks := false
	for _, h := range keep {
		hasHooks = hasHooks || h.phase != notHook
	}
	if !hasHooks {
		return out, nil
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
					return nil, err
				}
				rd = st.reads[len(st.reads)-1]
				reads[j] = rd
			}
			out[i].reads = append(out[i].reads, rd)
		}
	}
	return out, nil
}
