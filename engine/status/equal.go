package status

import (
	"encoding/json"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// loomConditions are the condition types Loom sets on every parent, in
// their order.
var loomConditions = []string{TypeReady, TypeProgressing, TypeDegraded}

// ownedConditions are the condition types Loom owns (a suspended parent's
// Suspended, and Drifted, besides); others are left alone.
var ownedConditions = append(slices.Clone(loomConditions), TypeSuspended, TypeDrifted)

// Equal reports whether the status fields Loom writes hold the same values
// in want (as Compute returns it) and in the live parent's status. Only
// Loom's fields are compared: observedGeneration, state, children,
// templateRevision, Loom's conditions, and the extra fields present in want. Fields and
// conditions that others own are ignored. Values are compared after
// decoding, so a time in another zone or a number in another Go type is
// equal when it means the same. The controller writes status only when
// Equal is false.
func Equal(want map[string]any, live *unstructured.Unstructured) bool {
	var got map[string]any
	if live != nil {
		raw, _, _ := unstructured.NestedFieldNoCopy(live.Object, "status")
		got, _ = raw.(map[string]any)
	}
	var extraKeys []string
	for k := range want {
		if !slices.Contains(reservedFields, k) {
			extraKeys = append(extraKeys, k)
		}
	}
	return equality.Semantic.DeepEqual(project(want, extraKeys), project(got, extraKeys))
}

// projection is the part of a status that Loom owns, decoded.
type projection struct {
	ObservedGeneration field
	State              field
	Conditions         map[string]metav1.Condition
	Children           []childEntry
	TemplateRevision   field
	Extra              map[string]field
}

// field is a value that may be absent.
type field struct {
	Found bool
	Value any
}

// childEntry is one status.children entry.
type childEntry struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Cluster    string `json:"cluster,omitempty"`
	Manage     string `json:"manage,omitempty"`
	Ready      bool   `json:"ready"`
	Status     string `json:"status,omitempty"`
	Message    string `json:"message,omitempty"`
}

// project decodes Loom's fields of a status, and the extra fields named.
func project(status map[string]any, extraKeys []string) projection {
	p := projection{Conditions: map[string]metav1.Condition{}, Extra: map[string]field{}}
	if gen, ok := intField(status, fieldObservedGeneration); ok {
		p.ObservedGeneration = field{Found: true, Value: gen}
	}
	if v, ok := status[fieldState]; ok {
		p.State = field{Found: true, Value: v}
	}
	for _, c := range decodeConditions(status[fieldConditions]) {
		if slices.Contains(ownedConditions, c.Type) {
			p.Conditions[c.Type] = c
		}
	}
	p.Children = decodeChildren(status[fieldChildren])
	if v, ok := status[fieldTemplateRevision]; ok {
		p.TemplateRevision = field{Found: true, Value: v}
	}
	for _, k := range extraKeys {
		if v, ok := status[k]; ok {
			p.Extra[k] = field{Found: true, Value: normalize(v)}
		} else {
			p.Extra[k] = field{}
		}
	}
	return p
}

// ChildKinds returns the kinds listed in a parent's status.children: the
// kinds Loom applied for it last time, which may include kinds its
// templates no longer render (and whose children must be pruned).
func ChildKinds(parent *unstructured.Unstructured) []schema.GroupVersionKind {
	raw, _, _ := unstructured.NestedFieldNoCopy(parent.Object, "status", fieldChildren)
	var out []schema.GroupVersionKind
	for _, e := range decodeChildren(raw) {
		if gv, err := schema.ParseGroupVersion(e.APIVersion); err == nil && e.Kind != "" {
			out = append(out, gv.WithKind(e.Kind))
		}
	}
	return out
}

// decodeChildren decodes a status.children list, skipping any entry that
// is not a child. An empty list decodes to nil.
func decodeChildren(raw any) []childEntry {
	items, _ := raw.([]any)
	var out []childEntry
	for _, item := range items {
		var e childEntry
		if b, err := json.Marshal(item); err != nil || json.Unmarshal(b, &e) != nil {
			continue
		}
		out = append(out, e)
	}
	return out
}

// normalize re-decodes a JSON value, so that numbers have the Go types the
// API machinery gives them whichever decoder built v.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := utiljson.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

// ChildClusters returns the workload clusters the parent's status lists
// children in, in the order listed, each once.
func ChildClusters(parent *unstructured.Unstructured) []string {
	raw, _, _ := unstructured.NestedFieldNoCopy(parent.Object, "status", fieldChildren)
	var out []string
	for _, e := range decodeChildren(raw) {
		if e.Cluster != "" && !slices.Contains(out, e.Cluster) {
			out = append(out, e.Cluster)
		}
	}
	return out
}
