package status

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/object"
)

// Lengths that keep the status readable in kubectl and far below the
// CRD's limits.
const (
	maxConditionMessage = 1024
	maxChildMessage     = 256
)

// The status fields Loom owns. The status template may not set them.
const (
	fieldObservedGeneration = "observedGeneration"
	fieldConditions         = "conditions"
	fieldState              = "state"
	fieldChildren           = "children"
	fieldTemplateRevision   = "templateRevision"
)

// FieldRelease is the status field of a chart set's release record
// (Input.Release).
const FieldRelease = "release"

var reservedFields = []string{fieldObservedGeneration, fieldConditions, fieldState, fieldChildren, fieldTemplateRevision}

// child is one entry of status.children while it is being computed.
type child struct {
	apiVersion, kind, name string
	// cluster is the workload cluster the child is placed in, "" for the
	// cluster Loom runs in.
	cluster string
	state   ChildState
	// applyErr is set when applying this child failed.
	applyErr error
	// dependency is set when the child waits for another child, or is in
	// a dependency cycle, and was not applied, or is an observed child
	// that does not exist.
	dependency bool
	// mode is the child's object.AnnotationManage, "" for full.
	mode string
}

// String names the child the way messages do: "Deployment web".
func (c child) String() string { return c.kind + " " + c.name }

// Compute returns the parent's new status as an unstructured map, ready to
// be server-side applied to the status subresource. It reads nothing but in:
// no clients, no clock but in.Now. The map holds only JSON values (string,
// bool, int64, []any, map[string]any), so it deep-copies and encodes as is.
//
// The status has observedGeneration, the Ready, Progressing and Degraded
// conditions, state, children, and the status template's extra fields. See
// the package documentation for how each is derived.
func Compute(in Input) map[string]any {
	parent := in.Parent
	if parent == nil {
		parent = &unstructured.Unstructured{Object: map[string]any{}}
	}
	gen := parent.GetGeneration()

	// 1. Judge each child: the rendered ones, or the last known ones when
	//    the templates did not render.
	var kids []child
	rendered := !(in.RenderErr != nil || in.RolloutErr != nil || in.IdentityErr != nil || in.Deleting != nil || in.Suspended != nil)
	if !rendered {
		kids = previousChildren(parent, in.Live, in.Rules)
	} else {
		kids = renderedChildren(in)
	}

	// 2. Take the status template's fields, minus the ones Loom owns; a
	//    suspended parent, whose templates do not render, keeps its last.
	if in.Suspended != nil && in.Extra == nil && in.ExtraErr == nil {
		in.Extra = previousExtra(parent)
	}
	extra, templateProblems := extraFields(in.Extra, in.ExtraErr)

	// 3. Derive the conditions and the state from what was found.
	f := gather(in, kids, templateProblems)
	ready, progressing, degraded := f.ready(), f.progressing(), f.degraded()
	next := []metav1.Condition{ready, progressing, degraded}
	if in.Suspended != nil {
		next = append(next, suspended(in.Suspended))
	}
	if d, ok := drifted(parent, in, rendered); ok {
		next = append(next, d)
	}
	conds := setConditions(parent, gen, in.Now, next...)

	// 4. Assemble; Loom's own fields are written last so nothing overrides them.
	status := make(map[string]any, len(extra)+len(reservedFields))
	for k, v := range extra {
		status[k] = v
	}
	if in.Release != nil {
		if rel, err := toJSONMap(in.Release); err == nil {
			status[FieldRelease] = rel
		}
	}
	status[fieldObservedGeneration] = gen
	status[fieldConditions] = conds
	status[fieldState] = f.state(ready)
	status[fieldChildren] = childList(kids)
	if in.Revision != "" {
		status[fieldTemplateRevision] = in.Revision
	}
	return status
}

// renderedChildren judges each rendered child against its live object and
// its apply result, in the rendered order.
func renderedChildren(in Input) []child {
	results := make(map[object.Ref]object.Result, len(in.Results))
	for _, r := range in.Results {
		results[r.Ref] = r
	}
	waits := make(map[object.Ref]string, len(in.Waits))
	for _, w := range in.Waits {
		if w.Child != nil {
			waits[*w.Child] = w.Message
		}
	}
	kids := make([]child, 0, len(in.Rendered))
	for _, obj := range in.Rendered {
		ref := object.RefOf(obj)
		res, applied := results[ref]
		live := in.Live[ref]
		if live == nil && applied {
			live = res.Object
		}
		c := child{apiVersion: obj.GetAPIVersion(), kind: obj.GetKind(), name: obj.GetName(), cluster: ref.Cluster, mode: modeOf(obj)}
		c.state = stateOf(c.apiVersion, c.kind, c.name, live, in.Rules)
		if live == nil && notOwned(c.mode) {
			c.dependency = true
			c.state.Message = missingMessage(c.mode, ref)
		}
		if applied && failed(res) {
			c.applyErr = res.Err
			c.state.Ready = false
			c.state.Message = "apply failed: " + errText(res.Err)
		}
		if msg, ok := waits[ref]; ok {
			c.dependency = true
			c.state.Ready = false
			c.state.Message = msg
		}
		kids = append(kids, c)
	}
	return kids
}

// previousChildren is the children list when the templates did not render:
// the list in the parent's status, since nothing was applied or pruned.
// An entry whose live object the caller supplied is judged afresh; the
// others keep what the last successful pass wrote.
func previousChildren(parent *unstructured.Unstructured, live map[object.Ref]*unstructured.Unstructured, rules []config.ReadinessRule) []child {
	raw, _, _ := unstructured.NestedFieldNoCopy(parent.Object, "status", fieldChildren)
	entries := decodeChildren(raw)
	kids := make([]child, 0, len(entries))
	for _, e := range entries {
		c := child{apiVersion: e.APIVersion, kind: e.Kind, name: e.Name, cluster: e.Cluster, mode: e.Manage}
		ref := object.Ref{
			GroupKind: schema.FromAPIVersionAndKind(e.APIVersion, e.Kind).GroupKind(),
			Namespace: parent.GetNamespace(),
			Name:      e.Name,
			Cluster:   e.Cluster,
		}
		if obj, ok := live[ref]; ok && obj != nil {
			c.state = stateOf(c.apiVersion, c.kind, c.name, obj, rules)
		} else {
			r := matchRule(c.apiVersion, c.kind, c.name, rules)
			c.state = ChildState{Ready: e.Ready, Status: e.Status, Message: e.Message, Ignored: r != nil && r.Ignore}
		}
		kids = append(kids, c)
	}
	return kids
}

// failed reports whether an apply result is a failure.
func failed(r object.Result) bool { return r.Action == object.Failed || r.Err != nil }

// errText is err's text, or a placeholder for a failure without an error.
func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}

// childList renders the children as status.children entries; an entry
// names its cluster only for a child in a workload cluster.
func childList(kids []child) []any {
	out := make([]any, 0, len(kids))
	for _, c := range kids {
		e := map[string]any{
			"apiVersion": c.apiVersion,
			"kind":       c.kind,
			"name":       c.name,
			"ready":      c.state.Ready,
			"status":     c.state.Status,
			"message":    truncate(c.state.Message, maxChildMessage),
		}
		if c.cluster != "" {
			e["cluster"] = c.cluster
		}
		if c.mode != "" {
			e["manage"] = c.mode
		}
		out = append(out, e)
	}
	return out
}

// extraFields returns the status template's fields as JSON values, without
// the fields Loom owns, and the problems found: the template's own failure,
// or reserved fields it tried to set. On a failure no extra field is
// written, so stale values do not linger as if they were current.
func extraFields(extra map[string]any, extraErr error) (map[string]any, []string) {
	if extraErr != nil {
		return nil, []string{"status template failed: " + extraErr.Error()}
	}
	if len(extra) == 0 {
		return nil, nil
	}
	out, err := toJSONMap(extra)
	if err != nil {
		return nil, []string{fmt.Sprintf("status template fields are not JSON: %v", err)}
	}
	var dropped []string
	for _, k := range reservedFields {
		if _, ok := out[k]; ok {
			delete(out, k)
			dropped = append(dropped, k)
		}
	}
	if len(dropped) == 0 {
		return out, nil
	}
	return out, []string{fmt.Sprintf("status template sets %s, which Loom owns; ignored", strings.Join(dropped, ", "))}
}

// previousExtra is the parent's status without the fields Loom owns: the
// status template's fields as last written.
func previousExtra(parent *unstructured.Unstructured) map[string]any {
	prev, _, _ := unstructured.NestedMap(parent.Object, "status")
	for _, k := range append(slices.Clone(reservedFields), FieldRelease) {
		delete(prev, k)
	}
	return prev
}

// toJSONMap deep-copies m into plain JSON values, with whole numbers as
// int64 the way the API machinery decodes them.
func toJSONMap(m map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := utiljson.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
// Invalid UTF-8 (an error that quotes a template's bytes) is replaced
// first, as JSON would replace it, so that the API server stores the
// message as written and the cut holds after encoding.
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	const mark = "..."
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
