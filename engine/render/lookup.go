package render

import (
	"errors"
	"fmt"
	"slices"

	"github.com/loom-operator/loom/engine/config"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Reader answers the lookups of templates. Render never reads the cluster
// itself: the caller hands it a Reader (the controller's caches, a file of
// objects offline, the live cluster for a diff), and render returns what
// was read beside what it rendered.
//
// Every object a Reader returns is the caller's to keep and mutate.
type Reader interface {
	// Get returns the object, or nil when there is none.
	Get(gvk schema.GroupVersionKind, namespace, name string) (map[string]any, error)
	// List returns the objects of a kind in namespace ("" for a
	// cluster-scoped kind).
	List(gvk schema.GroupVersionKind, namespace string) ([]map[string]any, error)
	// Namespaced reports whether the kind is namespaced.
	Namespaced(gvk schema.GroupVersionKind) (bool, error)
}

// Read is one lookup a render made.
type Read struct {
	// GVK is the kind looked up, at the version the template named.
	GVK schema.GroupVersionKind
	// Namespace and Name name the object; Name is "" for a list.
	Namespace, Name string
	// Object is what the lookup returned: the live object, or nil when
	// there was none. It is nil for a list.
	Object map[string]any
	// Own is true when the kind is not declared in loom.yaml, so the read
	// may only be of one of the parent's own children.
	Own bool

	file string
	pos  int // bytes of the file's output written before the lookup
}

// GroupKind is the read's kind without its version.
func (r Read) GroupKind() schema.GroupKind { return r.GVK.GroupKind() }

// String names the object read: "Deployment.apps default/web", or
// "ConfigMap default/*" for a list.
func (r Read) String() string {
	name := r.Name
	if name == "" {
		name = "*"
	}
	if r.Namespace == "" {
		return r.GroupKind().String() + " " + name
	}
	return r.GroupKind().String() + " " + r.Namespace + "/" + name
}

// ErrLookupRefused marks a lookup that the set's declarations do not allow:
// an undeclared kind, or a namespace outside the parent's own and the
// declared ones. It is a render error, like any other.
var ErrLookupRefused = errors.New("lookup refused")

// lookupState is what the lookup function of one render knows.
type lookupState struct {
	reader Reader
	rules  []config.LookupRule
	// specLookups is loom.yaml's: text from the parent's spec may look up.
	specLookups bool
	namespace   string // the parent's
	parentUID   string
	reads       []Read
	file        string
	// refuse holds reads of undeclared kinds that turned out not to be
	// the parent's children: a second execution of the file fails at the
	// lookup itself, so that the error has the template's line.
	refuse map[string]bool
}

// readKey identifies an object by group, kind, namespace and name.
func readKey(gk schema.GroupKind, namespace, name string) string {
	return gk.String() + "/" + namespace + "/" + name
}

// key identifies the object read (readKey).
func (r Read) key() string { return readKey(r.GroupKind(), r.Namespace, r.Name) }

// lookup is Helm's lookup: the live object as a map, an empty map when
// there is none, and {items: [...]} for a name of "".
func (r *renderer) lookup(apiVersion, kind, namespace, name string) (map[string]any, error) {
	if r.lk == nil {
		return map[string]any{}, nil // the parser's stub tree, or a partial's check
	}
	if r.fromSpec > 0 {
		if err := r.lk.refuseFromSpec(apiVersion, kind, namespace, name); err != nil {
			return nil, err
		}
	}
	return r.lk.lookup(r.out.n, apiVersion, kind, namespace, name)
}

// refuseFromSpec refuses a lookup made by template text that comes from
// the parent's spec (text tpl runs that the set's author did not write),
// unless loom.yaml's specLookups allows it.
func (st *lookupState) refuseFromSpec(apiVersion, kind, namespace, name string) error {
	if st.specLookups {
		return nil
	}
	return fmt.Errorf("%w: %s %s %s/%s is looked up by template text that comes from the parent's spec (text that tpl runs): set specLookups: true in %s to let whoever writes a parent look up what the set may read",
		ErrLookupRefused, apiVersion, kind, namespace, name, config.File)
}

// lookup answers one lookup made at offset pos of the current file's
// output.
func (st *lookupState) lookup(pos int, apiVersion, kind, namespace, name string) (map[string]any, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("lookup: apiVersion %q: %w", apiVersion, err)
	}
	gvk := gv.WithKind(kind)
	rule := st.rule(gvk.GroupKind())
	read := Read{GVK: gvk, Namespace: namespace, Name: name, Own: rule == nil, file: st.file, pos: pos}
	if err := st.allowed(&read, rule); err != nil {
		return nil, err
	}
	if st.refuse[read.key()] {
		return nil, fmt.Errorf("%w: %s %s/%s: kind %s is not declared in %s lookups, and %s is not a child this parent renders",
			ErrLookupRefused, kind, read.Namespace, name, gvk.GroupKind(), config.File, name)
	}
	if st.reader == nil {
		st.reads = append(st.reads, read)
		if name == "" {
			return listOf(gvk, nil), nil
		}
		return map[string]any{}, nil
	}
	if name == "" {
		items, err := st.reader.List(gvk, read.Namespace)
		if err != nil {
			return nil, fmt.Errorf("lookup %s: %w", read, err)
		}
		st.reads = append(st.reads, read)
		return listOf(gvk, items), nil
	}
	obj, err := st.reader.Get(gvk, read.Namespace, name)
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %w", read, err)
	}
	if read.Own && obj != nil && st.parentUID != "" && !controlledBy(obj, st.parentUID) {
		// An undeclared kind: only the parent's own children are readable.
		// A parent with no UID was never stored (loom render, loom test):
		// the objects of its lookups file stand for its children as they are.
		obj = nil
	}
	read.Object = obj
	st.reads = append(st.reads, read)
	if obj == nil {
		return map[string]any{}, nil
	}
	// A copy, so that a template that mutates what it looked up cannot
	// change the reader's object.
	return deepCopyMap(obj), nil
}

// allowed checks a lookup against the set's declarations and the tenant
// boundary: a namespaced lookup stays in the parent's namespace or the
// namespaces declared for its kind. It fills in read.Namespace for a
// cluster-scoped kind ("").
func (st *lookupState) allowed(read *Read, rule *config.LookupRule) error {
	gvk := read.GVK
	if read.Own && read.Name == "" {
		return fmt.Errorf("%w: list of %s: kind %s is not declared in %s lookups (only a parent's own children, by name, need no declaration)",
			ErrLookupRefused, gvk.Kind, gvk.GroupKind(), config.File)
	}
	// With no reader to ask, Kubernetes' built-in kinds are all whose
	// scope is known.
	namespaced := !isBuiltinClusterScoped(gvk.GroupKind())
	if st.reader != nil {
		var err error
		if namespaced, err = st.reader.Namespaced(gvk); err != nil {
			return fmt.Errorf("lookup %s %s: %w", gvk.GroupVersion(), gvk.Kind, err)
		}
	}
	if !namespaced {
		if read.Own {
			return fmt.Errorf("%w: %s %s is cluster-scoped, and not declared in %s lookups", ErrLookupRefused, gvk.Kind, read.Name, config.File)
		}
		read.Namespace = ""
		return nil
	}
	switch {
	case read.Namespace == "": // before the parent's: a cluster-scoped parent has none
		return fmt.Errorf("%w: %s across all namespaces: a lookup reads the parent's namespace %q or a namespace declared for %s in %s",
			ErrLookupRefused, gvk.Kind, st.namespace, gvk.GroupKind(), config.File)
	case read.Namespace == st.namespace:
		return nil
	case rule != nil && slices.Contains(rule.Namespaces, read.Namespace):
		return nil
	}
	return fmt.Errorf("%w: %s %s/%s: namespace %q is neither the parent's (%q) nor declared for %s in %s lookups",
		ErrLookupRefused, gvk.Kind, read.Namespace, read.Name, read.Namespace, st.namespace, gvk.GroupKind(), config.File)
}

// rule returns the declaration of gk, or nil.
func (st *lookupState) rule(gk schema.GroupKind) *config.LookupRule {
	return config.LookupRuleFor(st.rules, gk)
}

// listOf is Helm's shape for a list lookup.
func listOf(gvk schema.GroupVersionKind, items []map[string]any) map[string]any {
	list := make([]any, len(items))
	for i, it := range items {
		list[i] = it
	}
	return map[string]any{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind + "List", "items": list}
}

// controlledBy reports whether obj's controller ownerReference has uid.
func controlledBy(obj map[string]any, uid string) bool {
	meta, _ := obj["metadata"].(map[string]any)
	refs, _ := meta["ownerReferences"].([]any)
	for _, r := range refs {
		m, _ := r.(map[string]any)
		if c, _ := m["controller"].(bool); c && uid != "" && m["uid"] == uid {
			return true
		}
	}
	return false
}
