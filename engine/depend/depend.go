package depend

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/status"
)

// Plan is what the dependency stage decided for one render.
type Plan struct {
	// Apply are the children to apply now, in the rendered order.
	Apply []*unstructured.Unstructured
	// Held are the children not applied now, waiting or in a cycle; an
	// existing object of theirs must not be pruned.
	Held map[object.Ref]bool
	// Waits say what waits for what, for the parent's status.
	Waits []status.Wait
	// Cycles name each dependency cycle, for the parent's status.
	Cycles []string
	// Complete is false while a failed file waits for a dependency: its
	// children are unknown, so nothing may be pruned.
	Complete bool
	// Err is the render error of a failed file whose dependencies are all
	// ready: the file is broken, not waiting.
	Err error
}

// Decide splits the rendered children into those applied now and those
// that wait, finds dependency cycles, and judges the files that failed
// after a lookup. Readiness is judged by rules on the objects the lookups
// returned.
func Decide(out *render.Output, rules []config.ReadinessRule) Plan {
	p := Plan{Held: map[object.Ref]bool{}, Complete: true}
	index := make(map[key]int, len(out.Children))
	for i, c := range out.Children {
		if object.TargetCluster(c) == "" { // lookups read the cluster Loom runs in
			index[keyOf(c.GroupVersionKind().GroupKind(), c.GetNamespace(), c.GetName())] = i
		}
	}
	// 1. The edges: child i looked up child j (j != i), and whether j, as
	//    read, is ready.
	deps := make([][]dep, len(out.Children))
	for i, reads := range out.Reads {
		deps[i] = dependencies(reads, index, i, rules)
	}
	// 2. Cycles: every child in one is held.
	for _, scc := range cycles(deps) {
		names := make([]string, len(scc))
		for k, i := range scc {
			p.Held[object.RefOf(out.Children[i])] = true
			names[k] = describe(out.Children[i])
		}
		p.Cycles = append(p.Cycles, fmt.Sprintf("dependency cycle: %s look each other up, so none of them can be created first", strings.Join(names, ", ")))
	}
	// 3. Children that wait for one that is not ready.
	for i, c := range out.Children {
		ref := object.RefOf(c)
		if p.Held[ref] {
			continue
		}
		if d, ok := firstUnready(deps[i]); ok {
			p.Held[ref] = true
			p.Waits = append(p.Waits, status.Wait{Child: &ref, Message: fmt.Sprintf("%s waits for %s: %s", describe(c), describe(out.Children[d.child]), d.why)})
			continue
		}
		p.Apply = append(p.Apply, c)
	}
	// 4. Failed files: waiting, or broken.
	for _, f := range out.Deferred {
		if d, ok := firstUnready(dependencies(f.Reads, index, -1, rules)); ok {
			p.Complete = false
			p.Waits = append(p.Waits, status.Wait{Message: fmt.Sprintf("%s waits for %s: %s", f.File, describe(out.Children[d.child]), d.why)})
			continue
		}
		if p.Err == nil {
			p.Err = f.Err
		}
	}
	return p
}

// dep is one child that another looked up.
type dep struct {
	child int
	ready bool
	why   string // why it is not ready
}

// key identifies a child the way a lookup names it.
type key struct {
	gk              schema.GroupKind
	namespace, name string
}

func keyOf(gk schema.GroupKind, namespace, name string) key { return key{gk, namespace, name} }

// dependencies are the rendered children that reads looked up, other than
// self, each judged on the object the lookup returned.
func dependencies(reads []render.Read, index map[key]int, self int, rules []config.ReadinessRule) []dep {
	var out []dep
	for _, rd := range reads {
		if rd.Name == "" {
			continue
		}
		j, ok := index[keyOf(rd.GroupKind(), rd.Namespace, rd.Name)]
		if !ok || j == self {
			continue
		}
		d := dep{child: j}
		if rd.Object == nil {
			d.why = "not found yet"
		} else {
			st := status.ChildStatus(&unstructured.Unstructured{Object: rd.Object}, rules)
			d.ready, d.why = st.Ready, st.Message
			if d.why == "" { // kstatus has no message for, say, a Ready condition False without one
				d.why = "status " + st.Status
			}
		}
		out = append(out, d)
	}
	return out
}

// firstUnready returns the first dependency that is not ready.
func firstUnready(deps []dep) (dep, bool) {
	for _, d := range deps {
		if !d.ready {
			return d, true
		}
	}
	return dep{}, false
}

// describe names a child the way status messages do: "Deployment web".
func describe(c *unstructured.Unstructured) string { return c.GetKind() + " " + c.GetName() }

// cycles returns the strongly connected components of more than one child
// (Tarjan's algorithm), each sorted, in order of their first child.
func cycles(deps [][]dep) [][]int {
	n := len(deps)
	index, low := make([]int, n), make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var out [][]int
	next := 0
	var visit func(v int)
	visit = func(v int) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, d := range deps[v] {
			w := d.child
			if index[w] < 0 {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var scc []int
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			scc = append(scc, w)
			if w == v {
				break
			}
		}
		if len(scc) > 1 {
			sort.Ints(scc)
			out = append(out, scc)
		}
	}
	for v := range n {
		if index[v] < 0 {
			visit(v)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a][0] < out[b][0] })
	return out
}
